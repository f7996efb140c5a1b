// RoPE forward and backward: one thread per (token, head, pair i < D/2). QK-norm with RoPE: a block per token.
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/rmsnorm.cuh"
#include "replica/kernels/cuda/rope.h"

namespace replica::cuda {

namespace {

constexpr int kThreads = 256;

// The pair (x1, x2) = (v[i], v[i + D/2]) rotated by the angle whose cosine is c and sine s. Every product and sum is
// rounded on its own (no contraction into an FMA), so the fused kernel below rotates exactly as rope_kernel does.
__device__ inline void rotate_pair(float* v, int64_t i, int64_t half, float x1, float x2, float c, float s) {
  v[i] = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
  v[i + half] = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
}

__global__ void rope_kernel(float* x, const float* cos, const float* sin, int64_t T, int64_t heads, int64_t half,
                            int64_t pairs, float sign) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= pairs) return;
  const int64_t i = idx % half, row = idx / half;  // row = (b·T + t)·heads + h
  const int64_t t = (row / heads) % T;
  float* v = x + row * 2 * half;
  rotate_pair(v, i, half, v[i], v[i + half], cos[t * half + i], sign * sin[t * half + i]);
}

// One token's row of heads·D values: normalised as rmsnorm_forward_kernel does (the same rstd and products), then
// each head's pairs rotated as rope_kernel does, and with y16 also rounded to bf16 as convert_to_bf16 rounds; the
// normalised row is never written.
__global__ void rmsnorm_rope_kernel(float* y, uint16_t* y16, float* rstd, const float* x, const float* w,
                                    const float* cos, const float* sin, int64_t T, int64_t heads, int64_t half,
                                    float eps) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x, C = heads * 2 * half, t = row % T;
  const float* xr = x + row * C;
  const float s = row_rstd(xr, C, eps, shared);
  if (threadIdx.x == 0) rstd[row] = s;
  for (int64_t p = threadIdx.x; p < heads * half; p += blockDim.x) {
    const int64_t h = p / half, i = p % half, a = h * 2 * half + i, b = a + half;
    const float x1 = __fmul_rn(__fmul_rn(xr[a], s), w[a]), x2 = __fmul_rn(__fmul_rn(xr[b], s), w[b]);
    float* yh = y + row * C + h * 2 * half;
    rotate_pair(yh, i, half, x1, x2, cos[t * half + i], sin[t * half + i]);
    if (y16) {
      uint16_t* y16h = y16 + row * C + h * 2 * half;
      y16h[i] = to_bf16_bits(yh[i]);
      y16h[i + half] = to_bf16_bits(yh[i + half]);
    }
  }
}

void rotate(Context& ctx, float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
            int64_t D, float sign) {
  const int64_t pairs = B * T * heads * (D / 2);
  if (pairs == 0) return;
  launch("rope", rope_kernel, unsigned(ceil_div(pairs, kThreads)), kThreads, 0, ctx.stream(), x, cos, sin, T, heads,
         D / 2, pairs, sign);
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

void rmsnorm_rope_forward(Context& ctx, float* y, bf16* y16, float* rstd, const float* x, const float* w,
                          const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D, float eps) {
  if (B * T == 0) return;
  launch("rmsnorm_rope_forward", rmsnorm_rope_kernel, unsigned(B * T), kThreads, 0, ctx.stream(), y,
         reinterpret_cast<uint16_t*>(y16), rstd, x, w, cos, sin, T, heads, D / 2, eps);
}

}  // namespace replica::cuda
