// distributed/memory_plan: the per-rank memory for `replica plan --ranks`, with whole and with sharded weights.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "replica/distributed/memory_plan.h"
#include "replica/distributed/shard_layout.h"
#include "replica/model/params.h"

namespace replica::distributed {
namespace {

model::ModelConfig untied_model() {  // untied: the head group (final norm + LM head 1000×16) is the largest group
  return model::model_config_from_json({{"model_type", "olmo3"},
                                        {"vocab_size", 1000},
                                        {"hidden_size", 16},
                                        {"intermediate_size", 32},
                                        {"num_hidden_layers", 2},
                                        {"num_attention_heads", 2},
                                        {"num_key_value_heads", 2},
                                        {"head_dim", 8},
                                        {"sliding_window", 4}},
                                       "test model");
}

const OptimizerStateMemory kAdamW{{"exp_avg", "exp_avg_sq"}, false}, kAdamWOnHost{kAdamW.names, true};

TEST(DistMemoryPlan, WholeWeightsAreTheOnlyReplicatedState) {
  const model::ModelConfig c = untied_model();
  const model::ParamTable table(c);
  const double n = double(table.total()), group = double(table.largest_group());
  const std::vector<MemoryItem> one = data_parallel_memory(c, 1, 100.0, Precision::fp32, false, kAdamW),
                                 two = data_parallel_memory(c, 2, 100.0, Precision::bf16, false, kAdamW);
  ASSERT_EQ(one.size(), 7u);
  EXPECT_EQ(group, 16.0 + 1000 * 16);  // the head group: final norm + LM head
  EXPECT_EQ(one[0].bytes, 4 * n);      // weights
  EXPECT_EQ(one[1].bytes, 0.0);        // no bf16 copy in fp32
  EXPECT_EQ(one[2].bytes, 4 * n);      // the whole gradient sum at 1 rank
  EXPECT_EQ(one[3].bytes, 8 * n);      // moments
  EXPECT_EQ(one[4].bytes, 4 * group);  // one group's gradient
  EXPECT_EQ(one[5].bytes, 0.0);        // nothing to receive
  EXPECT_EQ(two[1].bytes, 2 * n);      // the bf16 copy of the weights
  // 2 ranks: every group here is a single norm block (under 16,384 floats), so one rank holds each whole: the
  // plan counts the largest shard, and the receive buffer one copy of the largest group.
  const double shard = double(std::max(ShardLayout(table, 2).shard_size(0), ShardLayout(table, 2).shard_size(1)));
  EXPECT_EQ(two[2].bytes, 4 * shard);
  EXPECT_EQ(two[3].bytes, 8 * shard);
  EXPECT_EQ(two[5].bytes, 4 * group);
  EXPECT_EQ(total_bytes(one), 16 * n + 4 * group + 100.0);
}

TEST(DistMemoryPlan, ShardedWeightsKeepOnlyTheGroupInUseWhole) {
  model::ModelConfig c = untied_model();
  c.vocab_size = 40000;  // groups of 40 blocks: 4 ranks hold 10 each
  const model::ParamTable table(c);
  const double n = double(table.total()), group = double(table.largest_group());
  const std::vector<MemoryItem> plan = data_parallel_memory(c, 4, 0.0, Precision::bf16, true, kAdamW);
  ASSERT_EQ(plan.size(), 7u);
  EXPECT_LE(plan[0].bytes, 1.1 * n);            // weights: about 4 n / 4
  EXPECT_EQ(plan[1].bytes, 6 * group);          // one gathered group, fp32 and bf16
  EXPECT_EQ(plan[2].bytes, plan[0].bytes);      // gradients: the same shard
  EXPECT_EQ(plan[3].bytes, 2 * plan[0].bytes);  // both moments
  EXPECT_EQ(plan[4].bytes, 4 * group);          // one group's gradient
  EXPECT_LE(plan[5].bytes, 4 * group);          // three other ranks' copies of a quarter of a group
  EXPECT_EQ(total_bytes(plan), 4 * plan[0].bytes + 10 * group + plan[5].bytes);
}

TEST(DistMemoryPlan, HostMomentsLeaveTheirStagingOnTheDevice) {
  const model::ModelConfig c = untied_model();
  const std::vector<MemoryItem> on_device = data_parallel_memory(c, 2, 0.0, Precision::bf16, false, kAdamW),
                                 on_host = data_parallel_memory(c, 2, 0.0, Precision::bf16, false, kAdamWOnHost);
  ASSERT_EQ(on_host.size(), on_device.size());
  EXPECT_EQ(on_host[3].bytes, 4.0 * double(kHostMomentStagingFloats));
  EXPECT_NE(on_host[3].note.find("host memory"), std::string::npos);
  EXPECT_EQ(total_bytes(on_host) - on_host[3].bytes, total_bytes(on_device) - on_device[3].bytes);
}

// The optimizer state is as many shard-sized fp32 arrays as the optimizer names: two for AdamW, one for SGD with
// momentum, none for plain SGD; nothing else in the plan depends on the optimizer.
TEST(DistMemoryPlan, OptimizerStateIsSizedByItsStateCount) {
  const model::ModelConfig c = untied_model();
  const ShardLayout layout(model::ParamTable(c), 2);
  const double shard = double(std::max(layout.shard_size(0), layout.shard_size(1)));
  const std::vector<MemoryItem> adamw = data_parallel_memory(c, 2, 0.0, Precision::bf16, false, kAdamW),
                                 momentum = data_parallel_memory(c, 2, 0.0, Precision::bf16, false,
                                                                 {{"momentum_buffer"}, false}),
                                 plain = data_parallel_memory(c, 2, 0.0, Precision::bf16, false, {});
  ASSERT_EQ(momentum.size(), adamw.size());
  ASSERT_EQ(plain.size(), adamw.size());
  EXPECT_EQ(adamw[3].name, "optimizer state fp32");
  EXPECT_EQ(adamw[3].bytes, 8 * shard);
  EXPECT_EQ(momentum[3].bytes, 4 * shard);
  EXPECT_EQ(plain[3].bytes, 0.0);
  EXPECT_EQ(adamw[3].note, "sharded: exp_avg, exp_avg_sq");
  EXPECT_EQ(momentum[3].note, "sharded: momentum_buffer");
  EXPECT_EQ(plain[3].note, "sharded: none");
  EXPECT_EQ(total_bytes(adamw) - total_bytes(momentum), 4 * shard);
  EXPECT_EQ(total_bytes(momentum) - total_bytes(plain), 4 * shard);
}

}  // namespace
}  // namespace replica::distributed
