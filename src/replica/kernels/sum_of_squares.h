// What the blocked sums of squares of both backends share (kernels/cpu/sum_of_squares.h, kernels/cuda/grad_norm.h)
// with the shard layout that must start shards on their boundaries (distributed/shard_layout.h): the block size.
#pragma once
#include <cstddef>

namespace replica {

// Floats per partial sum of the gradient norm: the blocks fix the summation order on every backend and for
// every data-parallel sharding (shards start on block boundaries).
inline constexpr size_t kSquareSumBlock = size_t(1) << 14;

}  // namespace replica
