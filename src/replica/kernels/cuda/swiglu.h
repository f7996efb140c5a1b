// SwiGLU gate on the GPU, same contract as kernels/cpu/swiglu.h: s = silu(g) · u, elementwise, fp32.
#pragma once
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// s16 (when given) = s rounded to bf16, the down projection's operand, written in the same pass.
void swiglu_forward(Context& ctx, float* s, bf16* s16, const float* g, const float* u, int64_t n);
// dg = ds · u · silu'(g),  du = ds · silu(g); dg16 and du16 (when given) = them rounded to bf16.
void swiglu_backward(Context& ctx, float* dg, float* du, bf16* dg16, bf16* du16, const float* ds, const float* g,
                     const float* u, int64_t n);

}  // namespace replica::cuda
