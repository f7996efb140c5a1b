// Elementwise fp32 operations on the GPU that the model and the optimizer need between the layers.
#pragma once
#include <cstdint>

#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// out[i] = a[i] + b[i]; out may alias a or b (the residual stream, gradient sums).
void add(Context& ctx, float* out, const float* a, const float* b, int64_t n);

}  // namespace replica::cuda
