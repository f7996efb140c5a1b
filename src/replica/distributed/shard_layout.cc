// ShardLayout: every group split in whole norm blocks, rank r taking blocks [nb r / W, nb (r + 1) / W).
#include "replica/distributed/shard_layout.h"

#include <algorithm>

#include "replica/core/error.h"
#include "replica/kernels/sum_of_squares.h"

namespace replica::distributed {

ShardLayout::ShardLayout(const model::ParamTable& table, int world)
    : world_(world), groups_(table.groups()), shard_sizes_(size_t(world), 0) {
  check(world > 0, "ShardLayout: {} ranks", world);
  std::sort(groups_.begin(), groups_.end(),
            [](model::ParamTable::Range a, model::ParamTable::Range b) { return a.begin < b.begin; });
  const size_t B = kSquareSumBlock, W = size_t(world);
  for (model::ParamTable::Range g : groups_) {
    const size_t blocks = (g.end - g.begin + B - 1) / B;
    for (size_t r = 0; r < W; r++) {
      Part p;
      p.begin = std::min(g.end, g.begin + blocks * r / W * B);
      p.end = std::min(g.end, g.begin + blocks * (r + 1) / W * B);
      p.offset = shard_sizes_[r];
      p.first_block = blocks_ + blocks * r / W;
      shard_sizes_[r] += p.length();
      parts_.push_back(p);
    }
    blocks_ += blocks;
  }
}

size_t ShardLayout::group_at(size_t begin) const {
  auto it = std::lower_bound(groups_.begin(), groups_.end(), begin,
                             [](model::ParamTable::Range g, size_t b) { return g.begin < b; });
  check(it != groups_.end() && it->begin == begin, "ShardLayout: no group starts at offset {}", begin);
  return size_t(it - groups_.begin());
}

std::vector<ShardLayout::Part> ShardLayout::parts_of(int rank) const {
  std::vector<Part> out;
  for (size_t g = 0; g < groups_.size(); g++)
    if (part(g, rank).length() > 0) out.push_back(part(g, rank));
  return out;
}

}  // namespace replica::distributed
