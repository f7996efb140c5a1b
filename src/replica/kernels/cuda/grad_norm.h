// The global gradient norm and clipping on the GPU, with optim/clip.h's blocking: Σ g² in double per
// kSquareSumBlock-float block, then the block sums added in block order (so data-parallel shards that
// exchange block sums get the same bits as one process).
#pragma once
#include <cstddef>
#include <vector>

#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// Σ g² in double of each block of x (device), in index order; returned on the host.
std::vector<double> block_sums_of_squares(Context& ctx, const float* x, size_t n);

// block_sums_of_squares added in block order on the host.
double sum_of_squares(Context& ctx, const float* x, size_t n);

// x[i] *= scale.
void scale(Context& ctx, float* x, size_t n, float scale);

}  // namespace replica::cuda
