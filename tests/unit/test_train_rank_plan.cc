// train/rank_plan: `replica plan`'s GPU memory parsing, the nearest layout that fits, and the step time from an MFU.
#include <gtest/gtest.h>

#include <algorithm>

#include "replica/core/error.h"
#include "replica/model/flops.h"
#include "replica/train/rank_plan.h"
#include "replica/train/recipe.h"

namespace replica::train {
namespace {

const model::ModelConfig& olmo3_7b() {
  static const model::ModelConfig c =
      model::load_model_config(std::string(REPLICA_SOURCE_DIR) + "/configs/models/olmo3_7b.yaml");
  return c;
}

// OLMo 3 7B stage 1's step: 512 instances of 8,192 tokens, one per rank at 512 ranks, in bf16.
StepConfig stage1_step(model::Remat remat, bool shard_weights) {
  StepConfig s;
  s.seq_len = 8192;
  s.global_batch = 512;
  s.micro_batch = 1;
  s.precision = Precision::bf16;
  s.remat = remat;
  s.sharding.weights = shard_weights;
  return s;
}

double per_rank(const StepConfig& step, int64_t ranks) {
  return distributed::total_bytes(rank_memory(olmo3_7b(), step, ranks));
}

TEST(RankPlan, GpuMemoryIsInGbOrGib) {
  EXPECT_EQ(parse_memory_size("80GB", "--gpu-memory"), 80e9);
  EXPECT_EQ(parse_memory_size("80 GB", "--gpu-memory"), 80e9);
  EXPECT_EQ(parse_memory_size("80", "--gpu-memory"), 80e9);  // a bare number is GB, as datasheets count
  EXPECT_EQ(parse_memory_size("74.5GiB", "--gpu-memory"), 74.5 * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_memory_size("141 GiB", "--gpu-memory"), 141.0 * 1024 * 1024 * 1024);
  for (const char* bad : {"", "GB", "80TB", "-80GB", "0", "eighty", "nan", "80 GiBs"}) {
    try {
      parse_memory_size(bad, "--gpu-memory");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--gpu-memory: expected a GPU's memory such as 80GB"), std::string::npos)
          << e.what();
    }
  }
}

// The plan sizes the optimizer state from the state the step's optimizer keeps: AdamW's two arrays of the shard, SGD
// with momentum's one, plain SGD's none; AdamW's host moments leave only their staging on the device.
TEST(RankPlan, OptimizerStateIsPlannedFromTheOptimizersStateCount) {
  auto with = [](optim::OptimizerName name, double momentum, bool host_moments) {
    StepConfig step = stage1_step(model::Remat::selective, true);
    step.optimizer.name = name;
    step.optimizer.sgd.momentum = momentum;
    step.optimizer.adamw.host_moments = host_moments;
    return rank_memory(olmo3_7b(), step, 512);
  };
  using optim::OptimizerName;
  const auto adamw = with(OptimizerName::adamw, 0, false), on_host = with(OptimizerName::adamw, 0, true),
             momentum = with(OptimizerName::sgd, 0.9, false), plain = with(OptimizerName::sgd, 0, false);
  const auto state = [](const std::vector<distributed::MemoryItem>& items) {
    const auto it = std::find_if(items.begin(), items.end(),
                                 [](const distributed::MemoryItem& i) { return i.name == "optimizer state fp32"; });
    return it == items.end() ? -1.0 : it->bytes;
  };
  const double gradients = adamw[2].bytes;  // the shard's summed gradient: one fp32 array of the shard
  ASSERT_EQ(adamw[2].name, "gradients fp32");
  EXPECT_EQ(state(adamw), 2 * gradients);
  EXPECT_EQ(state(momentum), gradients);
  EXPECT_EQ(state(plain), 0.0);
  EXPECT_EQ(state(on_host), 4.0 * double(kHostMomentStagingFloats));
  EXPECT_EQ(distributed::total_bytes(adamw) - distributed::total_bytes(plain), 2 * gradients);
}

TEST(RankPlan, ContextParallelismAddsTheGatheredKeysAndValues) {
  StepConfig step = stage1_step(model::Remat::selective, true);
  const size_t items = rank_memory(olmo3_7b(), step, 8).size();
  step.context.degree = 2;
  const std::vector<distributed::MemoryItem> cp = rank_memory(olmo3_7b(), step, 8);
  ASSERT_EQ(cp.size(), items + 1);
  EXPECT_EQ(cp.back().name, "context-parallel K/V");
  // Each rank holds the activations of half of each sequence.
  EXPECT_LT(cp[items - 1].bytes,
            rank_memory(olmo3_7b(), stage1_step(model::Remat::selective, true), 8)[items - 1].bytes);
}

TEST(RankPlan, TheNearestLayoutThatFitsRecomputesLeastThenShardsTheWeights) {
  const StepConfig as_ai2 = stage1_step(model::Remat::none, false);  // AI2's stage 1: no checkpointing, HSDP
  // At 512 ranks an 80 GB GPU holds neither remat=none (whole or sharded weights) nor selective with whole weights,
  // which need more than 80 GB: the nearest is selective with sharded weights.
  ASSERT_GT(per_rank(stage1_step(model::Remat::none, true), 512), 80e9);
  ASSERT_GT(per_rank(stage1_step(model::Remat::selective, false), 512), 80e9);
  const std::optional<StepConfig> nearest = nearest_layout_that_fits(olmo3_7b(), as_ai2, 512, 80e9);
  ASSERT_TRUE(nearest.has_value());
  EXPECT_EQ(nearest->remat, model::Remat::selective);
  EXPECT_TRUE(nearest->sharding.weights);
  EXPECT_LE(per_rank(*nearest, 512), 80e9);
  // Everything fits a large enough GPU: then nothing is recomputed and nothing more sharded.
  const std::optional<StepConfig> roomy = nearest_layout_that_fits(olmo3_7b(), as_ai2, 512, 1e12);
  ASSERT_TRUE(roomy.has_value());
  EXPECT_EQ(roomy->remat, model::Remat::none);
  EXPECT_FALSE(roomy->sharding.weights);
  // One rank holds all the fp32 state (108.8 GiB) whatever it recomputes.
  EXPECT_FALSE(nearest_layout_that_fits(olmo3_7b(), as_ai2, 1, 80e9).has_value());
}

TEST(RankPlan, StepTimeIsTheModelFlopsOverTheRanksRate) {
  const StepConfig step = stage1_step(model::Remat::selective, true);
  const double flops = model::training_flops_per_token(olmo3_7b(), 8192) * 512 * 8192;
  EXPECT_DOUBLE_EQ(step_flops(olmo3_7b(), step), flops);
  const double seconds = step_seconds(olmo3_7b(), step, 512, 0.36, 989.4e12);
  EXPECT_DOUBLE_EQ(seconds, flops / (512 * 0.36 * 989.4e12));
  // ../shared/reference/gpu-performance.md §2: OLMo 3 7B stage 1's ~7,700 tokens/s per H100 is 36.2 % MFU in
  // replica's convention, so 36 % is about 7,660 tokens/s per GPU.
  EXPECT_NEAR(512.0 * 8192 / (512 * seconds), 7700 * 0.36 / 0.362, 20);
  EXPECT_DOUBLE_EQ(step_seconds(olmo3_7b(), step, 256, 0.36, 989.4e12), 2 * seconds);
}

}  // namespace
}  // namespace replica::train
