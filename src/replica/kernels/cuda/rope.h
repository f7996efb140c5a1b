// Rotary position embedding on the GPU, in place, same contract as kernels/cpu/rope.h ("rotate half").
#pragma once
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// x: [B, T, heads, D]. cos, sin: [T, D/2] on the device, copied from a RopeTable (kernels/rope_table.h) so
// both backends use the same rounded angles.
void rope_forward(Context& ctx, float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                  int64_t D);
// The transpose of the (scaled) rotation: the gradient rotated by −angle.
void rope_backward(Context& ctx, float* dx, const float* cos, const float* sin, int64_t B, int64_t T,
                   int64_t heads, int64_t D);

// y = rope_forward(rmsnorm_forward(x)) over the whole row of heads·D values (OLMo's QK-norm spans every head), bit
// for bit as the two calls, in one pass that reads x once and does not keep the normalised row; y16 (when given) is
// y rounded to bf16 as convert_to_bf16 rounds (the attention kernels' operands). rstd: [B·T].
void rmsnorm_rope_forward(Context& ctx, float* y, bf16* y16, float* rstd, const float* x, const float* w,
                          const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D, float eps);

}  // namespace replica::cuda
