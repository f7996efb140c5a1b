// The memory plans: parameter counts from ParamTable, the rest is arithmetic.
#include "replica/dist/memory_plan.h"

#include <algorithm>

#include "replica/dist/collectives.h"
#include "replica/dist/data_parallel.h"
#include "replica/model/params.h"

namespace replica {

std::vector<MemoryItem> sharded_gradients_memory(const ModelConfig& config, int64_t ranks, double activation_bytes,
                                                 Precision precision) {
  const ParamTable table(config);
  const double n = double(table.total()), R = double(ranks);
  const std::vector<size_t> bounds = shard_bounds(table.total(), int(ranks));
  size_t largest_part = 0;  // of a group, in any rank's shard
  for (ParamTable::Range g : table.groups())
    for (size_t r = 0; r + 1 < bounds.size(); r++) {
      const size_t lo = std::max(g.begin, bounds[r]), hi = std::min(g.end, bounds[r + 1]);
      if (hi > lo) largest_part = std::max(largest_part, hi - lo);
    }
  const double open_groups = config.tie_embeddings ? 2 : 1;
  return {{"weights fp32", 4 * n, "replicated"},
          {"weights bf16", precision == Precision::bf16 ? 2 * n : 0.0, "rounded once per step for the GEMMs"},
          {"gradients fp32", 4 * n / R, "sharded: this rank's part of the sum over all micro-batches"},
          {"adam moments fp32", 8 * n / R, "sharded"},
          {"group gradient fp32", 4 * open_groups * double(table.largest_group()),
           "the group (block, head, embedding) the backward is filling"},
          {"receive buffer",
           4 * (R - 1) *
               double(std::min(largest_part, DataParallel::piece_floats(int(ranks), DataParallel::kReceiveFloats))),
           "other ranks' copies of a piece of this rank's part of a group"},
          {"activations", activation_bytes, "one micro-batch"}};
}

std::vector<MemoryItem> fsdp_memory(const ModelConfig& config, int64_t ranks, double activation_bytes) {
  const ParamTable table(config);
  const double n = double(table.total()), R = double(ranks);
  const double block = double(table.largest_group());  // the embedding and LM head are gathered like a block
  return {{"master weights fp32", 4 * n / R, "sharded"},
          {"gradients fp32", 4 * n / R, "sharded (reduce-scattered per block in fp32)"},
          {"adam moments fp32", 8 * n / R, "sharded"},
          {"gathered weights bf16", 2 * 2 * block, "two blocks: current + prefetched"},
          {"block gradient fp32", 4 * block, "before its reduce-scatter"},
          {"activations", activation_bytes, "one micro-batch"}};
}

double total_bytes(const std::vector<MemoryItem>& items) {
  double total = 0;
  for (const MemoryItem& item : items) total += item.bytes;
  return total;
}

}  // namespace replica
