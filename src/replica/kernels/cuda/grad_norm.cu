// Blocked sums of squares (a fixed tree inside each block) and the clipping scale.
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/grad_norm.h"
#include "replica/kernels/sum_of_squares.h"

namespace replica::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void block_sums_kernel(double* partial, const float* x, size_t n) {
  __shared__ double shared[32];
  const size_t begin = size_t(blockIdx.x) * kSquareSumBlock, end = min(n, begin + kSquareSumBlock);
  double sum = 0.0;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) sum += double(x[i]) * double(x[i]);
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void scale_kernel(float* x, size_t n, float s) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

}  // namespace

std::vector<double> block_sums_of_squares(Context& ctx, const float* x, size_t n) {
  const size_t blocks = (n + kSquareSumBlock - 1) / kSquareSumBlock;
  std::vector<double> sums(blocks);
  if (blocks == 0) return sums;
  Scratch<double> partial(ctx, blocks);
  launch("block_sums_of_squares", block_sums_kernel, unsigned(blocks), kThreads, 0, ctx.stream(), partial.get(), x, n);
  check_cuda(cudaMemcpyAsync(sums.data(), partial.get(), blocks * sizeof(double), cudaMemcpyDeviceToHost,
                             ctx.stream()), "block sums download");
  ctx.synchronize();
  return sums;
}

double sum_of_squares(Context& ctx, const float* x, size_t n) {
  double total = 0.0;
  for (double s : block_sums_of_squares(ctx, x, n)) total += s;
  return total;
}

void scale(Context& ctx, float* x, size_t n, float s) {
  if (n == 0) return;
  launch("scale", scale_kernel, unsigned((n + kThreads - 1) / kThreads), kThreads, 0, ctx.stream(), x, n, s);
}

}  // namespace replica::cuda
