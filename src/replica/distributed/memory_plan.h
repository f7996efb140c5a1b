// Memory per rank of data-parallel training, by component, for `replica plan --ranks N`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/kernels/adamw.h"
#include "replica/kernels/precision.h"
#include "replica/model/config.h"

namespace replica::distributed {

struct MemoryItem {
  std::string name;
  double bytes;
  std::string note;
};

// The optimizer's state as the plan counts it: one fp32 array of the rank's shard per name (optim::state_names: two
// for AdamW, none for plain SGD); with `in_host_memory` (AdamW's optim.host_moments) they are in host memory and the
// device holds only their staging buffers (kHostMomentStagingFloats).
struct OptimizerStateMemory {
  std::vector<std::string> names;
  bool in_host_memory = false;
};

// Memory per rank as distributed/data_parallel.h trains: the summed gradient and the optimizer state sharded over
// `ranks`; the fp32 weights replicated (and, in bf16 precision, their bf16 copy, rounded once per step) or, with
// `shard_weights`, sharded too, with the one or two groups the model is using gathered (and rounded to bf16); the
// gradient of the group the backward is filling (two groups when the LM head is tied to the embedding); the other
// ranks' copies of a piece of this rank's part of a group; `activation_bytes`. Independent of the number of
// micro-batches per rank.
std::vector<MemoryItem> data_parallel_memory(const model::ModelConfig& config, int64_t ranks, double activation_bytes,
                                             Precision precision, bool shard_weights,
                                             const OptimizerStateMemory& optimizer);

// What context parallelism of degree `context` adds per rank at sequence length T (distributed/context_parallel.h): one
// layer's K and V gathered over the whole sequence and its dK, dV, for a chunk of `head_stride` KV heads (0: all).
// The activations themselves are those of the rank's T / context tokens.
MemoryItem context_parallel_memory(const model::ModelConfig& config, int64_t T, int64_t context, int64_t head_stride);

double total_bytes(const std::vector<MemoryItem>& items);

}  // namespace replica::distributed
