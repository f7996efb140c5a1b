// RMSNorm on the GPU, fp32, same contract as kernels/cpu/rmsnorm.h: y = x / sqrt(mean(x²) + eps) * w.
#pragma once
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// x, y: [rows, C]; rstd: [rows] saved for the backward pass. One block per row.
void rmsnorm_forward(Context& ctx, float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C,
                     float eps);

// out = residual + rmsnorm_forward's y, bit for bit as rmsnorm_forward and then add, in one pass that does not keep
// y; out16 (when given) = out rounded to bf16. The reordered block's h = x + norm(sublayer) (model/transformer.cc).
void rmsnorm_add_forward(Context& ctx, float* out, bf16* out16, float* rstd, const float* residual, const float* x,
                         const float* w, int64_t rows, int64_t C, float eps);

// dx (=, or += when accumulate) and dw (+=); dx16 (when given) = dx as written, rounded to bf16. dw's column sums
// run in a fixed order: blocks of rows, then the blocks added in sequence (no atomics), so the result is the same
// on every run.
void rmsnorm_backward(Context& ctx, float* dx, bf16* dx16, float* dw, const float* dy, const float* x, const float* w,
                      const float* rstd, int64_t rows, int64_t C, bool accumulate);

}  // namespace replica::cuda
