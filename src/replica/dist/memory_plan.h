// Memory per rank of data-parallel training, by component, for `replica plan --ranks N`: sharded gradients as
// dist/ runs them today, and the fully sharded (FSDP / ZeRO-3) layout planned for GPUs (docs/scaling.md).
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

// Sharded gradients and optimizer state (ZeRO-2, as dist/data_parallel.h runs it): fp32 weights replicated and,
// in bf16 precision, rounded once per step (Olmo3's bf16 copy); the summed gradient and the Adam moments
// sharded over `ranks`; the gradient of the group the backward is filling (two groups when the LM head is tied
// to the embedding); the other ranks' copies of this rank's largest part of a group; `activation_bytes`.
// Independent of the number of micro-batches per rank.
std::vector<MemoryItem> sharded_gradients_memory(const ModelConfig& config, int64_t ranks, double activation_bytes,
                                                 Precision precision);

// FSDP over `ranks`: fp32 master weights, gradients and moments sharded; bf16 weights of two blocks
// gathered at a time (the current one and the prefetched next) and one block's fp32 gradient before its
// reduce-scatter; no gradient accumulation buffers (one micro-batch per rank, as OLMo 3 7B ran).
std::vector<MemoryItem> fsdp_memory(const ModelConfig& config, int64_t ranks, double activation_bytes);

double total_bytes(const std::vector<MemoryItem>& items);

}  // namespace replica
