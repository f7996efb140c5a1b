// dist/memory_plan: the per-rank memory for `replica plan --ranks`, with whole and with sharded weights.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "replica/dist/memory_plan.h"
#include "replica/model/params.h"

namespace replica {
namespace {

ModelConfig model() {  // untied: the head group (final norm + LM head 1000×16) is the largest group
  return model_config_from_json({{"model_type", "olmo3"}, {"vocab_size", 1000}, {"hidden_size", 16},
                                 {"intermediate_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 2},
                                 {"num_key_value_heads", 2}, {"head_dim", 8}, {"sliding_window", 4}},
                                "test model");
}

TEST(DistMemoryPlan, WholeWeightsAreTheOnlyReplicatedState) {
  const ModelConfig c = model();
  const ParamTable table(c);
  const double n = double(table.total()), group = double(table.largest_group());
  const std::vector<MemoryItem> one = data_parallel_memory(c, 1, 100.0, Precision::fp32, false),
                                 two = data_parallel_memory(c, 2, 100.0, Precision::bf16, false);
  ASSERT_EQ(one.size(), 7u);
  EXPECT_EQ(group, 16.0 + 1000 * 16);  // the head group: final norm + LM head
  EXPECT_EQ(one[0].bytes, 4 * n);      // weights
  EXPECT_EQ(one[1].bytes, 0.0);        // no bf16 copy in fp32
  EXPECT_EQ(one[2].bytes, 4 * n);      // the whole gradient sum at 1 rank
  EXPECT_EQ(one[3].bytes, 8 * n);      // moments
  EXPECT_EQ(one[4].bytes, 4 * group);  // one group's gradient
  EXPECT_EQ(one[5].bytes, 0.0);        // nothing to receive
  EXPECT_EQ(two[1].bytes, 2 * n);      // the bf16 copy of the weights
  EXPECT_EQ(two[2].bytes, 2 * n);      // 4 n / 2
  EXPECT_EQ(two[3].bytes, 4 * n);      // 8 n / 2
  // 2 ranks: the shards split at one 16,384-float block; the head group (the last 16,016 floats) lies in the
  // second shard, the embedding (the first 16,000) in the first: rank 1 receives at most the whole head group.
  EXPECT_EQ(two[5].bytes, 4 * group);
  EXPECT_EQ(total_bytes(one), 16 * n + 4 * group + 100.0);
}

TEST(DistMemoryPlan, ShardedWeightsKeepOnlyTheGroupInUseWhole) {
  const ModelConfig c = model();
  const double n = double(ParamTable(c).total()), group = double(ParamTable(c).largest_group());
  const std::vector<MemoryItem> plan = data_parallel_memory(c, 4, 0.0, Precision::bf16, true);
  ASSERT_EQ(plan.size(), 7u);
  EXPECT_EQ(plan[0].bytes, n);          // weights: 4 n / 4
  EXPECT_EQ(plan[1].bytes, 6 * group);  // one gathered group, fp32 and bf16
  EXPECT_EQ(plan[2].bytes, n);          // gradients: 4 n / 4
  EXPECT_EQ(plan[3].bytes, 2 * n);      // moments: 8 n / 4
  EXPECT_EQ(plan[4].bytes, 4 * group);  // one group's gradient
  EXPECT_LE(plan[5].bytes, 3 * 4 * group);
  EXPECT_EQ(total_bytes(plan), 4 * n + 10 * group + plan[5].bytes);
}

}  // namespace
}  // namespace replica
