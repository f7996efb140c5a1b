// Global order: numpy-exact shuffle, truncation, batch rows and rank slices.
#include "replica/data/order.h"

#include <numeric>

#include "replica/core/error.h"
#include "replica/data/pcg64.h"

namespace replica::data {

GlobalOrder::GlobalOrder(uint64_t num_instances, uint64_t seed, uint64_t epoch, uint64_t global_batch)
    : global_batch_(global_batch) {
  check(global_batch > 0, "global batch must be positive");
  check(num_instances < 0xffffffffull, "{} instances do not fit the uint32 order (OLMo-core's limit)", num_instances);
  check(num_instances >= global_batch, "the dataset has {} instances, fewer than one global batch of {}",
        num_instances, global_batch);
  indices_.resize(num_instances);
  std::iota(indices_.begin(), indices_.end(), 0u);
  Pcg64 rng(seed + epoch);
  shuffle(indices_.data(), indices_.size(), rng);
  indices_.resize(global_batch * (num_instances / global_batch));
}

std::span<const uint32_t> GlobalOrder::batch(uint64_t b) const {
  check(b < num_batches(), "batch {} is past the end of the epoch ({} batches)", b, num_batches());
  return std::span<const uint32_t>(indices_).subspan(b * global_batch_, global_batch_);
}

std::vector<uint32_t> GlobalOrder::rank_slice(uint64_t b, int rank, int world) const {
  check(world > 0 && rank >= 0 && rank < world, "rank {} of world size {} is invalid", rank, world);
  check(global_batch_ % uint64_t(world) == 0, "global batch {} is not divisible by world size {}", global_batch_,
        world);
  std::span<const uint32_t> row = batch(b);
  std::vector<uint32_t> out;
  out.reserve(row.size() / world);
  for (size_t i = size_t(rank); i < row.size(); i += size_t(world)) out.push_back(row[i]);
  return out;
}

}  // namespace replica::data
