// RMSNorm forward and backward: a block per row for y and dx, then a two-pass column sum for dw. The fused forms
// (the residual add, the bf16 copies) compute each value as the separate calls would and write it once.
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/rmsnorm.h"
#include "replica/kernels/cuda/rmsnorm.cuh"

namespace replica::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kRowsPerPartial = 128;  // rows summed by one partial of the dw column sum

// y = x·rstd·w, or with a residual out = residual + x·rstd·w (the two products and the sum rounded separately: the
// bits of rmsnorm_forward and then add), and y16 (when given) = the values written, rounded to bf16.
__global__ void rmsnorm_forward_kernel(float* y, uint16_t* y16, float* rstd, const float* residual, const float* x,
                                       const float* w, int64_t C, float eps) {
  __shared__ float shared[32];
  const int64_t offset = int64_t(blockIdx.x) * C;
  const float* xr = x + offset;
  const float s = row_rstd(xr, C, eps, shared);
  if (threadIdx.x == 0) rstd[blockIdx.x] = s;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float v = __fmul_rn(__fmul_rn(xr[c], s), w[c]);
    if (residual) v = __fadd_rn(residual[offset + c], v);
    y[offset + c] = v;
    if (y16) y16[offset + c] = to_bf16_bits(v);
  }
}

// dx = r·(dy·w) − x · r³/C · Σ_c dy·w·x
// dx16 (when given): dx as written, rounded to bf16.
__global__ void rmsnorm_backward_dx_kernel(float* dx, uint16_t* dx16, const float* dy, const float* x, const float* w,
                                           const float* rstd, int64_t C, bool accumulate) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * C;
  const float* dyr = dy + row * C;
  float* dxr = dx + row * C;
  float dot = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dot += dyr[c] * w[c] * xr[c];
  dot = block_sum(dot, shared);
  const float s = rstd[row];
  const float k = dot * s * s * s / float(C);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float g = s * dyr[c] * w[c] - xr[c] * k;
    const float v = accumulate ? dxr[c] + g : g;
    dxr[c] = v;
    if (dx16) dx16[row * C + c] = to_bf16_bits(v);
  }
}

// partial[p, c] = Σ over rows [p·kRowsPerPartial, …) of dy·x·rstd, rows in order; one thread per column.
__global__ void rmsnorm_dw_partial_kernel(float* partial, const float* dy, const float* x, const float* rstd,
                                          int64_t rows, int64_t C) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int64_t r0 = int64_t(blockIdx.y) * kRowsPerPartial, r1 = min(rows, r0 + kRowsPerPartial);
  float sum = 0.0f;
  for (int64_t r = r0; r < r1; r++) sum += dy[r * C + c] * x[r * C + c] * rstd[r];
  partial[blockIdx.y * C + c] = sum;
}

// dw[c] += Σ_p partial[p, c], partials in order.
__global__ void rmsnorm_dw_sum_kernel(float* dw, const float* partial, int64_t partials, int64_t C) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sum = 0.0f;
  for (int64_t p = 0; p < partials; p++) sum += partial[p * C + c];
  dw[c] += sum;
}

}  // namespace

void rmsnorm_forward(Context& ctx, float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C,
                     float eps) {
  if (rows == 0) return;
  launch("rmsnorm_forward", rmsnorm_forward_kernel, unsigned(rows), kThreads, 0, ctx.stream(), y,
         static_cast<uint16_t*>(nullptr), rstd, static_cast<const float*>(nullptr), x, w, C, eps);
}

void rmsnorm_add_forward(Context& ctx, float* out, bf16* out16, float* rstd, const float* residual, const float* x,
                         const float* w, int64_t rows, int64_t C, float eps) {
  if (rows == 0) return;
  launch("rmsnorm_add_forward", rmsnorm_forward_kernel, unsigned(rows), kThreads, 0, ctx.stream(), out,
         reinterpret_cast<uint16_t*>(out16), rstd, residual, x, w, C, eps);
}

void rmsnorm_backward(Context& ctx, float* dx, bf16* dx16, float* dw, const float* dy, const float* x, const float* w,
                      const float* rstd, int64_t rows, int64_t C, bool accumulate) {
  if (rows == 0) return;
  launch("rmsnorm_backward_dx", rmsnorm_backward_dx_kernel, unsigned(rows), kThreads, 0, ctx.stream(), dx,
         reinterpret_cast<uint16_t*>(dx16), dy, x, w, rstd, C, accumulate);
  const int64_t partials = ceil_div(rows, kRowsPerPartial);
  Scratch<float> partial(ctx, size_t(partials * C));
  const dim3 grid(unsigned(ceil_div(C, kThreads)), unsigned(partials));
  launch("rmsnorm_dw_partial", rmsnorm_dw_partial_kernel, grid, kThreads, 0, ctx.stream(), partial.get(), dy, x, rstd,
         rows, C);
  launch("rmsnorm_dw_sum", rmsnorm_dw_sum_kernel, unsigned(ceil_div(C, kThreads)), kThreads, 0, ctx.stream(), dw,
         partial.get(), partials, C);
}

}  // namespace replica::cuda
