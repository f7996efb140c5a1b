// The memory plans: parameter counts from ParamTable, the rest is arithmetic.
#include "replica/distributed/memory_plan.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "replica/distributed/context_parallel.h"
#include "replica/distributed/data_parallel.h"
#include "replica/distributed/shard_layout.h"
#include "replica/model/params.h"

namespace replica::distributed {

std::vector<MemoryItem> data_parallel_memory(const model::ModelConfig& config, int64_t ranks, double activation_bytes,
                                             Precision precision, bool shard_weights,
                                             const OptimizerStateMemory& optimizer) {
  const model::ParamTable table(config);
  const double n = double(table.total()), group = double(table.largest_group());
  const ShardLayout layout(table, int(ranks));
  size_t largest_shard = 0, largest_receive = 0;  // floats, over the ranks
  for (int r = 0; r < int(ranks); r++) {
    largest_shard = std::max(largest_shard, layout.shard_size(r));
    largest_receive =
        std::max(largest_receive, DataParallel::receive_buffer_floats(layout, r, Sharding{}.receive_floats));
  }
  const double shard = double(largest_shard);
  const double open_groups = config.tie_embeddings ? 2 : 1, bf16 = precision == Precision::bf16 ? 1 : 0;
  std::vector<MemoryItem> items;
  if (shard_weights) {
    items.push_back({"weights fp32", 4 * shard, "sharded"});
    items.push_back({"gathered weights", (4 + 2 * bf16) * open_groups * group,
                     bf16 ? "the group in use, fp32 and its bf16 copy" : "the group in use"});
  } else {
    items.push_back({"weights fp32", 4 * n, "replicated"});
    items.push_back({"weights bf16", 2 * bf16 * n, "rounded once per step for the GEMMs"});
  }
  items.push_back({"gradients fp32", 4 * shard, "sharded: this rank's part of the sum over all micro-batches"});
  const double states = double(optimizer.names.size());
  const std::string names = optimizer.names.empty() ? "none" : fmt::format("{}", fmt::join(optimizer.names, ", "));
  if (optimizer.in_host_memory)
    items.push_back({"optimizer state fp32", 4 * double(kHostMomentStagingFloats),
                     fmt::format("staging: the {:.2f} GiB sharded ({}) are in host memory (optim.host_moments)",
                                 4 * states * shard / double(1 << 30), names)});
  else
    items.push_back({"optimizer state fp32", 4 * states * shard, fmt::format("sharded: {}", names)});
  items.push_back({"group gradient fp32", 4 * open_groups * group, "the group the backward is filling"});
  items.push_back(
      {"receive buffer", 4 * double(largest_receive), "other ranks' copies of a piece of this rank's part of a group"});
  items.push_back({"activations", activation_bytes, "one micro-batch"});
  return items;
}

MemoryItem context_parallel_memory(const model::ModelConfig& c, int64_t T, int64_t context, int64_t head_stride) {
  const size_t bytes = ContextParallel::bytes(T, context, c.n_heads, c.n_kv_heads, c.head_dim, head_stride);
  return {"context-parallel K/V", double(bytes), "one layer's keys and values of the whole sequence, and dK, dV"};
}

double total_bytes(const std::vector<MemoryItem>& items) {
  double total = 0;
  for (const MemoryItem& item : items) total += item.bytes;
  return total;
}

}  // namespace replica::distributed
