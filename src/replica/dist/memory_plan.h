// Memory per rank of data-parallel training, by component, for `replica plan --ranks N`: ZeRO-1 as dist/
// runs it today, and the fully sharded (FSDP / ZeRO-3) layout planned for GPUs (docs/scaling.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/kernels/types.h"
#include "replica/model/config.h"

namespace replica {

struct MemoryItem {
  std::string name;
  double bytes;
  std::string note;
};

// ZeRO-1: fp32 weights and gradient buffer replicated, Adam moments sharded over `ranks`; in bf16 precision
// the weights rounded once per step (Olmo3's bf16 copy); plus the reduce-scatter receive buffer (one
// gradient buffer when ranks > 1), the local micro-batch tree's partial sums (floor(log2 L) gradient buffers
// for L micro-batches per rank) and `activation_bytes`.
std::vector<MemoryItem> zero1_memory(const ModelConfig& config, int64_t ranks, int64_t micro_batches_per_rank,
                                     double activation_bytes, Precision precision);

// FSDP over `ranks`: fp32 master weights, gradients and moments sharded; bf16 weights of two blocks
// gathered at a time (the current one and the prefetched next) and one block's fp32 gradient before its
// reduce-scatter; no gradient accumulation buffers (one micro-batch per rank, as OLMo 3 7B ran).
std::vector<MemoryItem> fsdp_memory(const ModelConfig& config, int64_t ranks, double activation_bytes);

double total_bytes(const std::vector<MemoryItem>& items);

}  // namespace replica
