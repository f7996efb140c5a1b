// OLMo-core's global instance order (NumpyFSLDataLoader): indices = arange(N, uint32) shuffled by
// numpy Generator(PCG64(seed + epoch)).shuffle, truncated to G * (N // G), reshaped to [N // G, G].
// Batch b is row b; data-parallel rank r of W reads row[r::W], so a global batch never depends on W.
// Within a batch of G instances cut into micro-batches of M, global micro-batch c (0 <= c < G/M) is rows
// c, c + G/M, c + 2 G/M, ...; rank r computes micro-batches c = r + W k (k = 0 .. G/(W M) - 1), whose rows are
// exactly its row[r::W] slice. The gradient sums micro-batches in the order c = 0, 1, 2, ... (distributed/data_parallel.h),
// one chain that every W computes alike: this is what makes a run's bits independent of the number of ranks.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace replica::data {

// The rows (positions 0 .. G-1 within a global batch of G) of global micro-batch c for micro-batches of M rows:
// c, c + G/M, c + 2 G/M, ... Raises replica::Error unless M divides G and c < G/M.
std::vector<uint64_t> micro_batch_rows(uint64_t global_batch, uint64_t micro_batch, uint64_t c);
// The rows `rank` of `world` computes, micro-batch by micro-batch: its local micro-batch k (rows [k M, (k + 1) M) of
// the result) is global micro-batch rank + world k. As a set, these are the rows rank, rank + W, ... (row[r::W]).
std::vector<uint64_t> rank_rows(uint64_t global_batch, uint64_t micro_batch, int rank, int world);

class GlobalOrder {
 public:
  GlobalOrder(uint64_t num_instances, uint64_t seed, uint64_t epoch, uint64_t global_batch);

  uint64_t num_batches() const { return indices_.size() / global_batch_; }
  uint64_t global_batch() const { return global_batch_; }
  std::span<const uint32_t> indices() const { return indices_; }  // [num_batches * global_batch]
  std::span<const uint32_t> batch(uint64_t b) const;
  // row[rank::world]: the instances of batch b that `rank` reads (OLMo-core's rank assignment), in row order.
  std::vector<uint32_t> rank_slice(uint64_t b, int rank, int world) const;
  // The instances of batch b at rank_rows(G, micro_batch, rank, world): the same set as rank_slice, in the order of
  // the rank's micro-batches.
  std::vector<uint32_t> rank_micro_batches(uint64_t b, int rank, int world, uint64_t micro_batch) const;

 private:
  uint64_t global_batch_;
  std::vector<uint32_t> indices_;
};

}  // namespace replica::data
