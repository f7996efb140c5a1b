// How the flat buffer is split over W ranks. Every group of ParamTable::groups() (the units the model acquires and
// hands over: the embedding, each block, the head) is split across all ranks in whole kSquareSumBlock blocks counted
// from the group's start. So each group's gradient reduction and weight gather spreads over every rank's links, and
// each block of the gradient norm's partial sums lies in one rank. A rank's shard is its parts of all groups, in flat
// order, stored contiguously.
#pragma once
#include <cstddef>
#include <vector>

#include "replica/kernels/sum_of_squares.h"
#include "replica/model/params.h"

namespace replica::distributed {

class ShardLayout {
 public:
  struct Part {
    size_t begin = 0, end = 0;  // the flat range (empty when begin == end)
    size_t offset = 0;          // where it starts in its rank's shard
    size_t first_block = 0;     // the number of its first block of the gradient norm (blocks(), below)
    size_t length() const { return end - begin; }
    size_t blocks() const { return (length() + kSquareSumBlock - 1) / kSquareSumBlock; }  // of the gradient norm
  };

  ShardLayout(const model::ParamTable& table, int world);

  int world() const { return world_; }
  size_t groups() const { return groups_.size(); }
  model::ParamTable::Range group(size_t g) const { return groups_[g]; }  // in flat order
  size_t group_at(size_t begin) const;                            // the group that starts at flat offset `begin`
  const Part& part(size_t g, int rank) const { return parts_[g * size_t(world_) + size_t(rank)]; }
  std::vector<Part> parts_of(int rank) const;  // non-empty, in flat order
  size_t shard_size(int rank) const { return shard_sizes_[size_t(rank)]; }

  // The gradient norm's blocks, numbered in flat order: block b of group g is the b-th kSquareSumBlock floats from
  // the group's start (the last one maybe short).
  size_t blocks() const { return blocks_; }

 private:
  int world_;
  std::vector<model::ParamTable::Range> groups_;
  std::vector<Part> parts_;  // [group][rank]
  std::vector<size_t> shard_sizes_;
  size_t blocks_ = 0;
};

}  // namespace replica::distributed
