// The float8 cast on the GPU: per-block amax partials, one block that reduces them into the scale, the elementwise
// cast. (The float8 GEMM is in gemm.cu, beside the other cuBLASLt calls.)
#include <algorithm>

#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/float8.h"

namespace replica::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

// max that keeps a NaN, as torch.max does (fmaxf drops it).
__device__ inline float nan_max(float a, float b) { return a > b || a != a ? a : b; }

__device__ inline float value_at(const float* x, const bf16* x16, int64_t i) {
  if (!x16) return x[i];
  return float8_bits_float(uint32_t(x16[i].bits) << 16);  // bf16: the upper half of a float
}

// The block's nan_max over `v` of every thread, by a fixed tree in shared memory; thread 0 gets it.
__device__ inline float block_nan_max(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) shared[threadIdx.x] = nan_max(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  return shared[0];
}

__global__ void amax_partial_kernel(const float* x, const bf16* x16, int64_t n, float* partial) {
  __shared__ float shared[kThreads];
  float m = 0.0f;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads)
    m = nan_max(fabsf(value_at(x, x16, i)), m);
  const float block = block_nan_max(m, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = block;
}

__global__ void scale_kernel(const float* partial, int count, Float8Format format, bool power_of_two, float* scale,
                             float* inverse_scale) {
  __shared__ float shared[kThreads];
  float m = 0.0f;
  for (int i = threadIdx.x; i < count; i += kThreads) m = nan_max(partial[i], m);
  const float amax = block_nan_max(m, shared);
  if (threadIdx.x == 0) {
    const float s = float8_scale(amax, format, power_of_two);
    *scale = s;
    *inverse_scale = 1.0f / s;
  }
}

__global__ void cast_kernel(uint8_t* codes, const float* x, const bf16* x16, int64_t n, const float* scale,
                            Float8Format format) {
  const float s = *scale;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads)
    codes[i] = to_float8(value_at(x, x16, i) * s, format);
}

}  // namespace

void quantize_float8(Context& ctx, uint8_t* codes, float* inverse_scale, const float* x, const bf16* x16, int64_t n,
                     Float8Format format, bool power_of_two_scale) {
  const int blocks = int(std::clamp<int64_t>(ceil_div(n, kThreads), 1, kMaxBlocks));
  Scratch<float> partial(ctx, size_t(blocks) + 1);  // the partials, then the scale
  float* scale = partial.get() + blocks;
  launch("float8_amax", amax_partial_kernel, unsigned(blocks), kThreads, 0, ctx.stream(), x, x16, n, partial.get());
  launch("float8_scale", scale_kernel, 1u, kThreads, 0, ctx.stream(), partial.get(), blocks, format, power_of_two_scale,
         scale, inverse_scale);
  if (n == 0) return;
  launch("float8_cast", cast_kernel, unsigned(blocks), kThreads, 0, ctx.stream(), codes, x, x16, n, scale, format);
}

}  // namespace replica::cuda
