// dist/memory_plan: the ZeRO-1 and FSDP per-rank memory components for `replica plan --ranks`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "replica/dist/memory_plan.h"
#include "replica/model/params.h"

namespace replica {
namespace {

ModelConfig model() {  // untied: embedding 1000×16 is the largest "block"
  return model_config_from_json({{"model_type", "olmo3"}, {"vocab_size", 1000}, {"hidden_size", 16},
                                 {"intermediate_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 2},
                                 {"num_key_value_heads", 2}, {"head_dim", 8}, {"sliding_window", 4}},
                                "test model");
}

TEST(DistMemoryPlan, Zero1ShardsOnlyTheMoments) {
  const ModelConfig c = model();
  const double n = double(ParamTable(c).total());
  const std::vector<MemoryItem> one = zero1_memory(c, 1, 1, 100.0, Precision::fp32),
                                 eight = zero1_memory(c, 8, 6, 100.0, Precision::bf16);
  ASSERT_EQ(one.size(), 7u);
  EXPECT_EQ(one[0].bytes, 4 * n);        // weights
  EXPECT_EQ(one[1].bytes, 0.0);          // no bf16 copy in fp32
  EXPECT_EQ(one[3].bytes, 8 * n);        // moments, unsharded at 1 rank
  EXPECT_EQ(one[4].bytes, 0.0);          // no reduce buffer
  EXPECT_EQ(one[5].bytes, 0.0);          // one micro-batch: no tree partial sums
  EXPECT_EQ(eight[1].bytes, 2 * n);      // the bf16 copy of the weights
  EXPECT_EQ(eight[3].bytes, n);          // 8 n / 8
  EXPECT_EQ(eight[4].bytes, 4 * n);      // reduce buffer
  EXPECT_EQ(eight[5].bytes, 2 * 4 * n);  // floor(log2 6) = 2 partial sums
  EXPECT_EQ(total_bytes(one), 16 * n + 100.0);
}

TEST(DistMemoryPlan, FsdpShardsEverythingAndGathersTwoBlocks) {
  const ModelConfig c = model();
  const double n = double(ParamTable(c).total()), block = 1000.0 * 16;
  const std::vector<MemoryItem> plan = fsdp_memory(c, 4, 0.0);
  EXPECT_EQ(plan[0].bytes, n);              // 4 n / 4
  EXPECT_EQ(plan[2].bytes, 2 * n);          // 8 n / 4
  EXPECT_EQ(plan[3].bytes, 4 * block);      // two bf16 copies
  EXPECT_EQ(plan[4].bytes, 4 * block);      // one fp32 block gradient
  EXPECT_EQ(total_bytes(plan), 4 * n + 8 * block);
}

}  // namespace
}  // namespace replica
