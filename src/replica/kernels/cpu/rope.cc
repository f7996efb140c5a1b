// RoPE forward and backward (in place).
#include "replica/kernels/cpu/rope.h"

#include <cmath>

namespace replica::cpu {

// Rotates x [B, T, heads, D], whose time step t is at position first + t, by sign × angle.
static void rotate(float* x, const RopeTable& table, int64_t first, int64_t B, int64_t T, int64_t heads, int64_t D,
                   float sign) {
  const int64_t half = D / 2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++) {
      const float* c = table.cos.data() + (first + t) * half;
      const float* s = table.sin.data() + (first + t) * half;
      for (int64_t h = 0; h < heads; h++) {
        float* v = x + ((b * T + t) * heads + h) * D;
        for (int64_t i = 0; i < half; i++) {
          float x1 = v[i], x2 = v[i + half], si = sign * s[i];
          v[i] = x1 * c[i] - x2 * si;
          v[i + half] = x2 * c[i] + x1 * si;
        }
      }
    }
}

void rope_forward(float* x, const RopeTable& table, int64_t B, int64_t T, int64_t heads, int64_t D) {
  rotate(x, table, 0, B, T, heads, D, 1.0f);
}

void rope_backward(float* dx, const RopeTable& table, int64_t B, int64_t T, int64_t heads, int64_t D) {
  rotate(dx, table, 0, B, T, heads, D, -1.0f);
}

void rope_forward_at(float* x, const RopeTable& table, int64_t position, int64_t T, int64_t heads, int64_t D) {
  rotate(x, table, position, 1, T, heads, D, 1.0f);
}

}  // namespace replica::cpu
