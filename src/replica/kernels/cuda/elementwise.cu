// Elementwise kernels: one thread per element.
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/elementwise.h"

namespace replica::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void add_kernel(float* out, const float* a, const float* b, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

}  // namespace

void add(Context& ctx, float* out, const float* a, const float* b, int64_t n) {
  if (n == 0) return;
  launch("add", add_kernel, unsigned(ceil_div(n, kThreads)), kThreads, 0, ctx.stream(), out, a, b, n);
}

}  // namespace replica::cuda
