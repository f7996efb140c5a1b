// SwiGLU forward and backward: one thread per element, with the bf16 copies of the outputs (when asked for)
// written from the same registers.
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/swiglu.h"

namespace replica::cuda {

namespace {

__global__ void swiglu_forward_kernel(float* s, uint16_t* s16, const float* g, const float* u, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float sig = 1.0f / (1.0f + expf(-g[i]));
  const float out = g[i] * sig * u[i];
  s[i] = out;
  if (s16) s16[i] = to_bf16_bits(out);
}

__global__ void swiglu_backward_kernel(float* dg, float* du, uint16_t* dg16, uint16_t* du16, const float* ds,
                                       const float* g, const float* u, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float sig = 1.0f / (1.0f + expf(-g[i]));
  const float silu = g[i] * sig;
  const float d_up = ds[i] * silu;
  const float d_gate = ds[i] * u[i] * (sig * (1.0f + g[i] * (1.0f - sig)));
  du[i] = d_up;
  dg[i] = d_gate;
  if (du16) du16[i] = to_bf16_bits(d_up);
  if (dg16) dg16[i] = to_bf16_bits(d_gate);
}

}  // namespace

void swiglu_forward(Context& ctx, float* s, bf16* s16, const float* g, const float* u, int64_t n) {
  if (n == 0) return;
  launch("swiglu_forward", swiglu_forward_kernel, unsigned(ceil_div(n, 256)), 256, 0, ctx.stream(), s,
         reinterpret_cast<uint16_t*>(s16), g, u, n);
}

void swiglu_backward(Context& ctx, float* dg, float* du, bf16* dg16, bf16* du16, const float* ds, const float* g,
                     const float* u, int64_t n) {
  if (n == 0) return;
  launch("swiglu_backward", swiglu_backward_kernel, unsigned(ceil_div(n, 256)), 256, 0, ctx.stream(), dg, du,
         reinterpret_cast<uint16_t*>(dg16), reinterpret_cast<uint16_t*>(du16), ds, g, u, n);
}

}  // namespace replica::cuda
