// RMSNorm forward and backward: a block per row for y and dx, then a two-pass column sum for dw.
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/rmsnorm.h"

namespace replica::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kRowsPerPartial = 128;  // rows summed by one partial of the dw column sum

__global__ void rmsnorm_forward_kernel(float* y, float* rstd, const float* x, const float* w, int64_t C, float eps) {
  __shared__ float shared[32];
  const float* xr = x + blockIdx.x * C;
  float* yr = y + blockIdx.x * C;
  float sum_sq = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum_sq += xr[c] * xr[c];
  sum_sq = block_sum(sum_sq, shared);
  const float s = rsqrtf(sum_sq / float(C) + eps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = s;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) yr[c] = xr[c] * s * w[c];
}

// dx = r·(dy·w) − x · r³/C · Σ_c dy·w·x
__global__ void rmsnorm_backward_dx_kernel(float* dx, const float* dy, const float* x, const float* w,
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
    dxr[c] = accumulate ? dxr[c] + g : g;
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
  launch("rmsnorm_forward", rmsnorm_forward_kernel, unsigned(rows), kThreads, 0, ctx.stream(), y, rstd, x, w, C, eps);
}

void rmsnorm_backward(Context& ctx, float* dx, float* dw, const float* dy, const float* x, const float* w,
                      const float* rstd, int64_t rows, int64_t C, bool accumulate) {
  if (rows == 0) return;
  launch("rmsnorm_backward_dx", rmsnorm_backward_dx_kernel, unsigned(rows), kThreads, 0, ctx.stream(), dx, dy, x, w,
         rstd, C, accumulate);
  const int64_t partials = ceil_div(rows, kRowsPerPartial);
  Scratch<float> partial(ctx, size_t(partials * C));
  const dim3 grid(unsigned(ceil_div(C, kThreads)), unsigned(partials));
  launch("rmsnorm_dw_partial", rmsnorm_dw_partial_kernel, grid, kThreads, 0, ctx.stream(), partial.get(), dy, x, rstd,
         rows, C);
  launch("rmsnorm_dw_sum", rmsnorm_dw_sum_kernel, unsigned(ceil_div(C, kThreads)), kThreads, 0, ctx.stream(), dw,
         partial.get(), partials, C);
}

}  // namespace replica::cuda
