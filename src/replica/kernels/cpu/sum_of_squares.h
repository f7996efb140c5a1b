// Blocked sums of squares on the CPU: the gradient norm's partial sums (optim/clip.h), fixed-size blocks so
// that the summation order, and the bits, depend neither on the thread count nor on data-parallel sharding.
#pragma once
#include <cstddef>
#include <vector>

#include "replica/kernels/sum_of_squares.h"

namespace replica::cpu {

// Σ x² in double of each kSquareSumBlock-float block of x, in index order (the last block may be short).
std::vector<double> block_sums_of_squares(const float* x, size_t n);

}  // namespace replica::cpu
