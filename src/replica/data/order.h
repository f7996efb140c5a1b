// OLMo-core's global instance order (NumpyFSLDataLoader): indices = arange(N, uint32) shuffled by
// numpy Generator(PCG64(seed + epoch)).shuffle, truncated to G * (N // G), reshaped to [N // G, G].
// Batch b is row b; data-parallel rank r of W reads row[r::W], so a global batch never depends on W.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace replica::data {

class GlobalOrder {
 public:
  GlobalOrder(uint64_t num_instances, uint64_t seed, uint64_t epoch, uint64_t global_batch);

  uint64_t num_batches() const { return indices_.size() / global_batch_; }
  uint64_t global_batch() const { return global_batch_; }
  std::span<const uint32_t> indices() const { return indices_; }  // [num_batches * global_batch]
  std::span<const uint32_t> batch(uint64_t b) const;
  // row[rank::world]: the instances of batch b that `rank` reads, in order (micro-batches are
  // consecutive pieces of it).
  std::vector<uint32_t> rank_slice(uint64_t b, int rank, int world) const;

 private:
  uint64_t global_batch_;
  std::vector<uint32_t> indices_;
};

}  // namespace replica::data
