// The memory plans: parameter counts from ParamTable, the rest is arithmetic.
#include "replica/dist/memory_plan.h"

#include <algorithm>

#include "replica/dist/tree.h"
#include "replica/model/params.h"

namespace replica {

std::vector<MemoryItem> zero1_memory(const ModelConfig& config, int64_t ranks, int64_t micro_batches_per_rank,
                                     double activation_bytes, Precision precision) {
  const double n = double(ParamTable(config).total()), R = double(ranks);
  const int64_t tree_buffers = tree_depth(micro_batches_per_rank) - 1;
  return {{"weights fp32", 4 * n, "replicated"},
          {"weights bf16", precision == Precision::bf16 ? 2 * n : 0.0, "rounded once per step for the GEMMs"},
          {"gradients fp32", 4 * n, "replicated (reduce-scattered: each rank keeps its shard's sum)"},
          {"adam moments fp32", 8 * n / R, "sharded (ZeRO-1)"},
          {"reduce buffer", ranks > 1 ? 4 * n : 0.0, "receives every rank's copy of this rank's shard"},
          {"accumulation", 4 * n * double(tree_buffers), "partial sums of the micro-batch tree"},
          {"activations", activation_bytes, "one micro-batch"}};
}

std::vector<MemoryItem> fsdp_memory(const ModelConfig& config, int64_t ranks, double activation_bytes) {
  const ParamTable table(config);
  const double n = double(table.total()), R = double(ranks);
  double block = 0;  // the largest block's parameters (the embedding and LM head are gathered like a block)
  for (const ParamEntry& e : table.entries())
    if (e.name.find("layers.0.") != std::string::npos) block += double(e.numel);
  block = std::max(block, double(config.vocab_size * config.d_model));
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
