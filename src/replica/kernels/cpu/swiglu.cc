// SwiGLU forward and backward.
#include "replica/kernels/cpu/swiglu.h"

#include <cmath>

namespace replica::cpu {

void swiglu_forward(float* s, const float* g, const float* u, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    float sig = 1.0f / (1.0f + std::exp(-g[i]));
    s[i] = g[i] * sig * u[i];
  }
}

void swiglu_backward(float* dg, float* du, const float* ds, const float* g, const float* u, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    float sig = 1.0f / (1.0f + std::exp(-g[i]));
    float silu = g[i] * sig;
    du[i] = ds[i] * silu;
    dg[i] = ds[i] * u[i] * (sig * (1.0f + g[i] * (1.0f - sig)));
  }
}

}  // namespace replica::cpu
