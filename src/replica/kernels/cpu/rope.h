// Rotary position embedding, non-interleaved ("rotate half"): for i < D/2,
//   y[i] = x[i]·cos − x[i+D/2]·sin,   y[i+D/2] = x[i+D/2]·cos + x[i]·sin,   angle = t / theta^(2i/D).
// Applied in place to [B, T, heads, D] with positions t = 0..T-1 in every instance (angles: kernels/rope_table.h).
#pragma once
#include <cstdint>

#include "replica/kernels/rope_table.h"

namespace replica::cpu {

void rope_forward(float* x, const RopeTable& table, int64_t B, int64_t T, int64_t heads, int64_t D);
// The rotation is orthogonal: the backward pass rotates the gradient by −angle.
void rope_backward(float* dx, const RopeTable& table, int64_t B, int64_t T, int64_t heads, int64_t D);
// Decoding: x [T, heads, D] is one sequence at positions position … position + T − 1 (table rows), in place.
void rope_forward_at(float* x, const RopeTable& table, int64_t position, int64_t T, int64_t heads, int64_t D);

}  // namespace replica::cpu
