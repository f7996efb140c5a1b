// Global-norm gradient clipping as torch.nn.utils.clip_grads_with_norm_ does it (OLMo-core's
// TransformerTrainModule._clip_grad_norm): grads *= min(1, max_norm / (norm + 1e-6)). clip_coefficient is the one
// formula: DataParallel::clip has the optimizer apply it to the sharded gradient as it reads it (Optimizer::step's
// grad_scale), clip_grad_norm applies it to a host buffer (tests, oracles).
#pragma once
#include <cstddef>

namespace replica::optim {

// The factor the gradient is multiplied by: min(1, max_norm / (norm + 1e-6)); 1 when max_norm is 0 (no clipping).
double clip_coefficient(double norm, double max_norm);

// Σ g² in double: block_sums_of_squares (kernels/cpu/sum_of_squares.h) added in block order, the same bits for any
// thread count (and for data-parallel shards that start on block boundaries and exchange their block sums).
double sum_of_squares(const float* x, size_t n);

// sqrt(sum_of_squares(grads, n)).
double global_norm(const float* grads, size_t n);

// Returns the total norm before clipping and scales grads by clip_coefficient(norm, max_norm).
double clip_grad_norm(float* grads, size_t n, double max_norm);

}  // namespace replica::optim
