// SwiGLU gate: s = silu(g) · u, with silu(g) = g · sigmoid(g). Forward and backward, elementwise.
#pragma once
#include <cstdint>

namespace replica::cpu {

void swiglu_forward(float* s, const float* g, const float* u, int64_t n);
// dg = ds · u · silu'(g),  du = ds · silu(g)
void swiglu_backward(float* dg, float* du, const float* ds, const float* g, const float* u, int64_t n);

}  // namespace replica::cpu
