// Rotary position embedding, non-interleaved ("rotate half"): for i < D/2,
//   y[i] = x[i]·cos − x[i+D/2]·sin,   y[i+D/2] = x[i+D/2]·cos + x[i]·sin,
// with cos, sin [T, D/2] a RopeTable's (kernels/rope_table.h): cos and sin of the angle at position t, scaled by YaRN's
// attention factor on the layers that use it (then the rotation is a rotation times that factor). Applied in place to
// [B, T, heads, D] with positions t = 0..T-1 in every instance; cos and sin are backend memory.
#pragma once
#include <cstdint>

namespace replica::cpu {

void rope_forward(float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D);
// The transpose: a·R(θ) is orthogonal up to the factor a, so the backward pass applies a·R(−θ) to the gradient.
void rope_backward(float* dx, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D);

}  // namespace replica::cpu
