// Global L2 norm of the gradient buffer and clipping as torch.nn.utils.clip_grads_with_norm_ does it
// (OLMo-core's TransformerTrainModule._clip_grad_norm): grads *= min(1, max_norm / (norm + 1e-6)).
#pragma once
#include <cstddef>
#include <vector>

#include "replica/kernels/cpu/sum_of_squares.h"  // block_sums_of_squares, kSquareSumBlock

namespace replica {

// Σ g² in double: block_sums_of_squares added in block order, the same bits for any thread count (and
// for data-parallel shards that start on block boundaries and exchange their block sums).
double sum_of_squares(const float* x, size_t n);

// sqrt(sum_of_squares(grads, n)).
double global_norm(const float* grads, size_t n);

// Returns the total norm before clipping and scales grads by min(1, max_norm / (norm + 1e-6)).
double clip_grad_norm(float* grads, size_t n, double max_norm);

}  // namespace replica
