// SwiGLU gate on the GPU, same contract as kernels/cpu/swiglu.h: s = silu(g) · u, elementwise, fp32.
#pragma once
#include <cstdint>

#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

void swiglu_forward(Context& ctx, float* s, const float* g, const float* u, int64_t n);
// dg = ds · u · silu'(g),  du = ds · silu(g)
void swiglu_backward(Context& ctx, float* dg, float* du, const float* ds, const float* g, const float* u, int64_t n);

}  // namespace replica::cuda
