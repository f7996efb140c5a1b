// The row statistic of RMSNorm, shared by the kernels that normalise a row (rmsnorm.cu, and rope.cu's fused QK-norm
// with RoPE), so that each computes the same rstd bit for bit.
#pragma once
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

// rsqrt(mean(x²) + eps) of the row xr[0, C), summed by the block (every thread gets it; `shared` holds 32 floats).
__device__ inline float row_rstd(const float* xr, int64_t C, float eps, float* shared) {
  float sum_sq = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum_sq += xr[c] * xr[c];
  sum_sq = block_sum(sum_sq, shared);
  return rsqrtf(sum_sq / float(C) + eps);
}

}  // namespace replica::cuda
