// RoPE forward and backward: one thread per (token, head, pair i < D/2).
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/rope.h"

namespace replica::cuda {

namespace {

__global__ void rope_kernel(float* x, const float* cos, const float* sin, int64_t T, int64_t heads, int64_t half,
                            int64_t pairs, float sign) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= pairs) return;
  const int64_t i = idx % half, row = idx / half;  // row = (b·T + t)·heads + h
  const int64_t t = (row / heads) % T;
  float* v = x + row * 2 * half;
  const float c = cos[t * half + i], s = sign * sin[t * half + i];
  const float x1 = v[i], x2 = v[i + half];
  v[i] = x1 * c - x2 * s;
  v[i + half] = x2 * c + x1 * s;
}

void rotate(Context& ctx, float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
            int64_t D, float sign) {
  const int64_t pairs = B * T * heads * (D / 2);
  if (pairs == 0) return;
  launch("rope", rope_kernel, unsigned(ceil_div(pairs, 256)), 256, 0, ctx.stream(), x, cos, sin, T, heads, D / 2, pairs,
         sign);
}

}  // namespace

void rope_forward(Context& ctx, float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                  int64_t D) {
  rotate(ctx, x, cos, sin, B, T, heads, D, 1.0f);
}

void rope_backward(Context& ctx, float* dx, const float* cos, const float* sin, int64_t B, int64_t T,
                   int64_t heads, int64_t D) {
  rotate(ctx, dx, cos, sin, B, T, heads, D, -1.0f);
}

}  // namespace replica::cuda
