// RMSNorm over the last dimension, in fp32: y = x / sqrt(mean(x²) + eps) * w. Forward and backward.
#pragma once
#include <cstdint>

namespace replica::cpu {

// x, y: [rows, C]; rstd: [rows] saved for the backward pass.
void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C, float eps);

// out = residual + rmsnorm_forward's y, bit for bit (y is not kept): the reordered block's h = x + norm(sublayer).
void rmsnorm_add_forward(float* out, float* rstd, const float* residual, const float* x, const float* w, int64_t rows,
                         int64_t C, float eps);

// dx (=, or += when accumulate) and dw (+=) from dy. Row reductions and the dw column sums have a fixed
// order (blocks of rows summed in sequence), so results do not depend on the thread count.
void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t rows, int64_t C, bool accumulate);

}  // namespace replica::cpu
