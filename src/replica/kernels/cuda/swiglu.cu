// SwiGLU forward and backward: one thread per element.
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/swiglu.h"

namespace replica::cuda {

namespace {

__global__ void swiglu_forward_kernel(float* s, const float* g, const float* u, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float sig = 1.0f / (1.0f + expf(-g[i]));
  s[i] = g[i] * sig * u[i];
}

__global__ void swiglu_backward_kernel(float* dg, float* du, const float* ds, const float* g, const float* u,
                                       int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float sig = 1.0f / (1.0f + expf(-g[i]));
  const float silu = g[i] * sig;
  du[i] = ds[i] * silu;
  dg[i] = ds[i] * u[i] * (sig * (1.0f + g[i] * (1.0f - sig)));
}

}  // namespace

void swiglu_forward(Context& ctx, float* s, const float* g, const float* u, int64_t n) {
  if (n == 0) return;
  launch("swiglu_forward", swiglu_forward_kernel, unsigned(ceil_div(n, 256)), 256, 0, ctx.stream(), s, g, u, n);
}

void swiglu_backward(Context& ctx, float* dg, float* du, const float* ds, const float* g, const float* u, int64_t n) {
  if (n == 0) return;
  launch("swiglu_backward", swiglu_backward_kernel, unsigned(ceil_div(n, 256)), 256, 0, ctx.stream(), dg, du, ds, g, u,
         n);
}

}  // namespace replica::cuda
