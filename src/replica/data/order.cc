// Global order: numpy-exact shuffle, truncation, batch rows, rank slices and micro-batches.
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

std::vector<uint32_t> GlobalOrder::rank_micro_batches(uint64_t b, int rank, int world, uint64_t micro_batch) const {
  std::span<const uint32_t> row = batch(b);
  std::vector<uint32_t> out;
  for (uint64_t i : rank_rows(global_batch_, micro_batch, rank, world)) out.push_back(row[i]);
  return out;
}

std::vector<uint64_t> micro_batch_rows(uint64_t global_batch, uint64_t micro_batch, uint64_t c) {
  check(micro_batch > 0 && global_batch % micro_batch == 0, "global batch {} is not a multiple of micro-batch {}",
        global_batch, micro_batch);
  const uint64_t count = global_batch / micro_batch;  // micro-batches per batch
  check(c < count, "micro-batch {} is past the end of the batch ({} micro-batches)", c, count);
  std::vector<uint64_t> rows;
  for (uint64_t i = c; i < global_batch; i += count) rows.push_back(i);
  return rows;
}

std::vector<uint64_t> rank_rows(uint64_t global_batch, uint64_t micro_batch, int rank, int world) {
  check(world > 0 && rank >= 0 && rank < world, "rank {} of world size {} is invalid", rank, world);
  check(micro_batch > 0 && global_batch % (micro_batch * uint64_t(world)) == 0,
        "global batch {} is not a multiple of micro-batch {} times world size {}", global_batch, micro_batch, world);
  std::vector<uint64_t> rows;
  for (uint64_t c = uint64_t(rank); c < global_batch / micro_batch; c += uint64_t(world)) {
    const std::vector<uint64_t> micro = micro_batch_rows(global_batch, micro_batch, c);
    rows.insert(rows.end(), micro.begin(), micro.end());
  }
  return rows;
}

}  // namespace replica::data
