// train/recipe: the shipped recipes hold the published numbers, overrides parse as YAML, bad recipes get
// errors naming the key, and to_yaml() round-trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "error_of.h"
#include "replica/core/error.h"
#include "replica/train/rank_plan.h"
#include "replica/train/recipe.h"
#include "replica/train/resume_check.h"
#include "replica/train/step.h"
#include "scratch_dir.h"

namespace replica::train {
namespace {

std::string recipe_path(const std::string& name) {
  return std::string(REPLICA_SOURCE_DIR) + "/configs/recipes/" + name;
}

// The recipe's model file; the shipped recipes name it relative to the source tree.
model::ModelConfig model_of(const Recipe& r) {
  const std::filesystem::path path(r.model.config);
  return model::load_model_config(path.is_absolute() ? path.string()
                                                     : std::string(REPLICA_SOURCE_DIR) + "/" + r.model.config);
}

std::string recipe_dir() { return replica::testing::scratch_dir("recipe").string(); }

const std::string kMinimal =
    "model: {config: m.yaml}\n"
    "data: {paths: [t.npy], seq_len: 16, global_batch_size: 8, micro_batch_size: 4}\n"
    "train: {max_steps: 100}\n"
    "schedule: {warmup_steps: 10}\n";

TEST(Recipe, Stage1HoldsThePublishedNumbers) {
  Recipe r = load_recipe(recipe_path("olmo3_7b_stage1.yaml"), {}, false);
  EXPECT_EQ(r.step.seq_len, 8192);
  EXPECT_EQ(r.step.global_batch, 512);
  EXPECT_EQ(r.tokens_per_step(), 4194304);
  EXPECT_EQ(r.loader.seed, 34521u);
  EXPECT_EQ(r.step.schedule.lr, 3e-4);
  EXPECT_EQ(r.step.optimizer.adamw.weight_decay, 0.1);
  EXPECT_EQ(r.step.optimizer.adamw.beta1, 0.9);
  EXPECT_EQ(r.step.optimizer.adamw.beta2, 0.95);
  EXPECT_EQ(r.step.optimizer.adamw.eps, 1e-8);
  EXPECT_EQ(r.step.clip, 1.0);
  EXPECT_TRUE(r.step.skip_step.enabled);
  EXPECT_EQ(r.step.skip_step.window, 128);
  EXPECT_EQ(r.step.skip_step.sigma, 6.0);
  EXPECT_EQ(r.step.z_loss, 1e-5);
  EXPECT_EQ(r.train.max_steps, 1413814);
  EXPECT_EQ(r.step.precision, Precision::bf16);
  // AI2's 512 ranks with one instance each; the least recomputation that fits an 80 GB GPU there, weights sharded as
  // HSDP shards them (the fit itself: RankPlan.EveryShipped7BRecipeFitsAn80GBGpuAtAi2sLayout).
  EXPECT_EQ(r.step.micro_batch, 1);
  EXPECT_EQ(r.step.global_batch % (512 * r.step.micro_batch), 0);
  EXPECT_EQ(r.step.remat, model::Remat::selective);
  EXPECT_TRUE(r.step.sharding.weights);
  EXPECT_EQ(r.step.context.degree, 1);
  optim::ScheduleConfig s = schedule_config(r);
  EXPECT_EQ(s.type, optim::ScheduleType::olmo3_stitched);
  EXPECT_EQ(s.warmup, 2000);
  EXPECT_EQ(s.t_max, 1192093);        // ceil(5e12 / 4,194,304)
  EXPECT_EQ(s.part2_t_max, 1668931);  // ceil(7e12 / 4,194,304)
  EXPECT_EQ(s.part2_warmup, 597046);
  EXPECT_NEAR(optim::learning_rate(s, 597046), 1.65e-4, 1e-18);
  EXPECT_NEAR(optim::learning_rate(s, 1413814), 3.93e-5, 0.005e-5);
  const optim::AdamWConfig& a = r.step.optimizer.adamw;
  EXPECT_EQ(a.beta1, 0.9);
  EXPECT_EQ(a.beta2, 0.95);
  EXPECT_NO_THROW(model_of(r));
}

TEST(Recipe, Stage2And3) {
  Recipe s2 = load_recipe(recipe_path("olmo3_7b_stage2.yaml"), {}, false);
  EXPECT_EQ(s2.step.schedule.lr, 2.0712352850360292e-4);
  EXPECT_EQ(s2.step.global_batch, 256);
  EXPECT_EQ(s2.loader.seed, 1337u);
  EXPECT_EQ(s2.train.max_steps, 47684);
  EXPECT_TRUE(s2.optim.load_state);
  EXPECT_EQ(s2.step.micro_batch, 2);  // AI2's 128 ranks: 2 instances each, one micro-batch
  EXPECT_EQ(s2.step.remat, model::Remat::keep_attention);
  EXPECT_TRUE(s2.step.sharding.weights);
  optim::ScheduleConfig s = schedule_config(s2);
  EXPECT_EQ(s.type, optim::ScheduleType::linear);
  EXPECT_EQ(s.t_max, 47684);
  EXPECT_EQ(optim::learning_rate(s, 47684), 0.0);

  Recipe s3 = load_recipe(recipe_path("olmo3_7b_stage3.yaml"), {}, false);
  EXPECT_EQ(s3.step.seq_len, 65536);
  EXPECT_EQ(s3.tokens_per_step(), 4194304);
  EXPECT_EQ(s3.train.max_steps, 11921);
  EXPECT_EQ(s3.step.micro_batch, 1);
  EXPECT_EQ(s3.step.context.degree, 8);      // AI2's DP 32 x CP 8
  EXPECT_EQ(s3.step.context.head_stride, 4);  // the script's head_stride
  EXPECT_EQ(s3.step.remat, model::Remat::selective);
  EXPECT_TRUE(s3.step.sharding.weights);
  EXPECT_FALSE(s3.step.float8);
  EXPECT_EQ(schedule_config(s3).warmup, 200);
  EXPECT_EQ(s3.loader.packing.kind, data::Packing::obfd);
  EXPECT_EQ(s3.loader.packing.source_group_size, 8);
  EXPECT_EQ(s3.loader.source_permutation_seed, 123);
  EXPECT_EQ(s3.loader.packing.long_doc_strategy, data::LongDocStrategy::truncate);
  const model::ModelConfig m3 = model_of(s3);
  ASSERT_TRUE(m3.rope_scaling.has_value());  // YaRN on the full-attention layers
  EXPECT_EQ(m3.rope_scaling->factor, 8.0);
  EXPECT_EQ(m3.max_seq_len, 65536);
  EXPECT_NEAR(optim::learning_rate(schedule_config(s3), 1), 1.0356176e-6, 1e-13);  // stage3.md §7
  EXPECT_NEAR(optim::learning_rate(schedule_config(s3), 11920), 1.7671148e-8, 1e-15);

  // What AI2 ran: the same but for the data-loader seed and the data (stage3.md §0.1).
  Recipe ran = load_recipe(recipe_path("olmo3_7b_stage3_as_run.yaml"), {}, false);
  EXPECT_EQ(ran.loader.seed, 4123u);
  EXPECT_EQ(ran.step.optimizer.adamw.weight_decay, 0.1);
  EXPECT_EQ(ran.step.context.degree, 8);
  EXPECT_EQ(ran.step.context.head_stride, 8);  // cp_head_stride: 8 as the run had it
  EXPECT_EQ(ran.step.remat, s3.step.remat);
  EXPECT_EQ(schedule_config(ran).t_max, schedule_config(s3).t_max);
}

// Each shipped 7B recipe as it is, at AI2's number of GPUs (olmo3.md §2, stage3.md §0.1), fits an 80 GB GPU
// (80e9 bytes) by replica's own plan, the plan `replica plan --config` prints. AI2 recomputed nothing in stages 1
// and 3; in replica that fits no 80 GB GPU even with sharded weights, which is why those recipes recompute.
TEST(Recipe, EveryShipped7BRecipeFitsAn80GBGpuAtAi2sLayout) {
  struct Layout {
    std::string recipe;
    int64_t ranks;
    bool ai2_recomputed_nothing;
  };
  const std::vector<Layout> layouts = {{"olmo3_7b_stage1.yaml", 512, true},
                                       {"olmo3_7b_stage2.yaml", 128, false},
                                       {"olmo3_7b_stage3.yaml", 256, true},
                                       {"olmo3_7b_stage3_as_run.yaml", 256, true}};
  for (const Layout& ai2 : layouts) {
    SCOPED_TRACE(ai2.recipe);
    const Recipe r = load_recipe(recipe_path(ai2.recipe), {}, false);
    const StepConfig step = step_config(r);
    ASSERT_EQ(ai2.ranks % step.context.degree, 0);
    const int64_t data_ranks = ai2.ranks / step.context.degree;
    ASSERT_EQ(step.global_batch % (data_ranks * step.micro_batch), 0);  // the batch divides over AI2's ranks
    EXPECT_LE(distributed::total_bytes(rank_memory(model_of(r), step, ai2.ranks)), 80e9);
    if (ai2.ai2_recomputed_nothing) {
      StepConfig as_ai2 = step;
      as_ai2.remat = model::Remat::none;
      EXPECT_GT(distributed::total_bytes(rank_memory(model_of(r), as_ai2, ai2.ranks)), 80e9);
    }
  }
}

TEST(Recipe, TinyLoadsWithItsFilesAndExpandsGlobs) {
  namespace fs = std::filesystem;
  std::string dir = recipe_dir();
  for (std::string domain : {"/web", "/code"}) fs::create_directories(dir + domain);
  for (std::string f : {"/train.mix", "/web/heldout.npy", "/code/heldout.npy"}) std::ofstream(dir + f) << "x";
  Recipe r = load_recipe(recipe_path("tiny.yaml"),
                         {"model.config=" + std::string(REPLICA_SOURCE_DIR) + "/configs/models/olmo3_tiny.yaml",
                          "data.mix_file=" + dir + "/train.mix", "data.validation_paths=[" + dir + "/*/heldout.npy]"});
  EXPECT_EQ(r.data.mix_file, dir + "/train.mix");
  EXPECT_EQ(r.data.validation_paths, (std::vector<std::string>{dir + "/code/heldout.npy", dir + "/web/heldout.npy"}));
  EXPECT_EQ(r.step.global_batch % r.step.micro_batch, 0);
  EXPECT_EQ(r.step.schedule.type, optim::ScheduleType::cosine);
  EXPECT_NO_THROW(model_of(r));
  std::string missing = error_of([&] {
    load_recipe(recipe_path("tiny.yaml"),
                {"model.config=" + std::string(REPLICA_SOURCE_DIR) + "/configs/models/olmo3_tiny.yaml",
                 "data.mix_file=" + dir + "/no.mix", "data.validation_paths=[]", "eval.every=0"});
  });
  EXPECT_NE(missing.find("data.mix_file"), std::string::npos) << missing;
}

TEST(Recipe, OverridesAreParsedAsYaml) {
  Recipe r = load_recipe_text(
      kMinimal, "minimal",
      {"data.paths=[a.npy, b.npy]", "optim.lr=1e-3", "optim.betas=[0.8, 0.99]", "train.precision=bf16",
       "schedule.type=wsd", "schedule.decay_steps=20", "optim.skip_step=false", "run.name=my run", "model.init_from=",
       "train.device=cuda", "train.remat=keep_attention", "train.shard_weights=true"},
      false);
  EXPECT_EQ(r.train.device, Device::cuda);
  EXPECT_EQ(r.step.remat, model::Remat::keep_attention);
  EXPECT_NE(r.to_yaml().find("remat: keep_attention"), std::string::npos);
  EXPECT_TRUE(r.step.sharding.weights);
  EXPECT_NE(r.to_yaml().find("shard_weights: true"), std::string::npos);
  EXPECT_EQ(r.data.paths, (std::vector<std::string>{"a.npy", "b.npy"}));
  EXPECT_EQ(r.step.schedule.lr, 1e-3);
  EXPECT_EQ(r.step.optimizer.adamw.beta1, 0.8);
  EXPECT_EQ(r.step.optimizer.adamw.beta2, 0.99);
  EXPECT_EQ(r.step.precision, Precision::bf16);
  EXPECT_EQ(r.step.schedule.type, optim::ScheduleType::wsd);
  EXPECT_EQ(r.step.schedule.decay, 20);
  EXPECT_FALSE(r.step.skip_step.enabled);
  EXPECT_EQ(r.run.name, "my run");
  EXPECT_EQ(r.model.init_from, "");
  EXPECT_EQ(schedule_config(r).t_max, 100);  // from train.max_steps
}

TEST(Recipe, NumericsAndDataSettingsAreKeys) {
  // What changes a run's numbers or data is in the recipe (and so in config.yaml and every checkpoint), not in the
  // environment: the attention kernel, the profile, the instance filter. The defaults: auto, off, off.
  const Recipe defaults = load_recipe_text(kMinimal, "minimal", {}, false);
  EXPECT_EQ(defaults.step.attention, AttentionKernel::automatic);
  EXPECT_FALSE(defaults.train.profile);
  EXPECT_FALSE(defaults.loader.filter.enabled);
  const Recipe r = load_recipe_text(
      kMinimal, "minimal", {"train.attention=wgmma", "train.profile=true", "data.instance_filter=true"}, false);
  EXPECT_EQ(r.step.attention, AttentionKernel::wgmma);
  EXPECT_TRUE(r.train.profile);
  EXPECT_TRUE(r.loader.filter.enabled);
  const std::string yaml = r.to_yaml();
  for (const char* line : {"attention: wgmma", "profile: true", "instance_filter: true"})
    EXPECT_NE(yaml.find(line), std::string::npos) << line << "\n" << yaml;
  EXPECT_EQ(load_recipe_text(yaml, "resolved", {}, false).to_yaml(), yaml);
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"train.attention=wmma"}, false); }).find("train.attention"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"data.instance_filter=often"}, false); })
                .find("data.instance_filter"),
            std::string::npos);
}

TEST(Recipe, Float8IsAKeyOffByDefaultThatReachesTheStep) {
  EXPECT_FALSE(load_recipe_text(kMinimal, "minimal", {}, false).step.float8);
  EXPECT_FALSE(step_config(load_recipe_text(kMinimal, "minimal", {}, false)).float8);
  const Recipe r = load_recipe_text(kMinimal, "minimal", {"train.float8=true"}, false);
  EXPECT_TRUE(r.step.float8);
  EXPECT_TRUE(step_config(r).float8);
  const std::string yaml = r.to_yaml();
  EXPECT_NE(yaml.find("float8: true"), std::string::npos) << yaml;
  EXPECT_EQ(load_recipe_text(yaml, "resolved", {}, false).to_yaml(), yaml);
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"train.float8=fp8"}, false); }).find("train.float8"),
            std::string::npos);
}

// optim.name picks the optimizer (optim/optimizers.h) and reaches the step; a checkpoint holds the state of the one
// it was saved with, so a resume may not change it, even with train.allow_change.
TEST(Recipe, TheOptimizerIsAKeyDefaultingToAdamW) {
  const Recipe defaults = load_recipe_text(kMinimal, "minimal", {}, false);
  EXPECT_EQ(defaults.step.optimizer.name, optim::OptimizerName::adamw);
  EXPECT_EQ(defaults.step.optimizer.sgd.momentum, 0.0);
  const Recipe r = load_recipe_text(kMinimal, "minimal", {"optim.name=sgd", "optim.momentum=0.9"}, false);
  EXPECT_EQ(step_config(r).optimizer.name, optim::OptimizerName::sgd);
  EXPECT_EQ(step_config(r).optimizer.sgd.momentum, 0.9);
  const std::string yaml = r.to_yaml();
  EXPECT_NE(yaml.find("name: sgd"), std::string::npos) << yaml;
  EXPECT_EQ(load_recipe_text(yaml, "resolved", {}, false).to_yaml(), yaml);
  const auto rules = resume_rules();
  const auto rule = std::find_if(rules.begin(), rules.end(), [](const auto& kv) { return kv.first == "optim.name"; });
  ASSERT_NE(rule, rules.end());
  EXPECT_EQ(rule->second, config::OnResume::refused);
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"optim.name=adam"}, false); })
                .find("optimizer must be 'adamw' or 'sgd', got 'adam'"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"optim.momentum=0.9"}, false); })
                .find("'optim.momentum' is SGD's (optim.name: sgd), not adamw's"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"optim.name=sgd", "optim.host_moments=true"}, false); })
                .find("'optim.host_moments' keeps AdamW's moments in host memory; optim.name: sgd has none there"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"optim.name=sgd", "optim.momentum=1"}, false); })
                .find("optim.momentum"),
            std::string::npos);
}

TEST(Recipe, MaxSecondsIsANeutralKeyOffByDefault) {
  EXPECT_EQ(load_recipe_text(kMinimal, "minimal", {}, false).train.max_seconds, 0.0);
  const Recipe r = load_recipe_text(kMinimal, "minimal", {"train.max_seconds=3600"}, false);
  EXPECT_EQ(r.train.max_seconds, 3600.0);
  EXPECT_EQ(load_recipe_text(r.to_yaml(), "resolved", {}, false).train.max_seconds, 3600.0);
  EXPECT_TRUE(neutral_on_resume("train.max_seconds", /*schedule_unchanged=*/false));  // a resume may change it
  EXPECT_NE(error_of([] { load_recipe_text(kMinimal, "m", {"train.max_seconds=-1"}, false); })
                .find("train.max_seconds"),
            std::string::npos);
}

TEST(Recipe, TheProgressStyleIsAKeyDefaultingToAuto) {
  EXPECT_EQ(load_recipe_text(kMinimal, "minimal", {}, false).train.progress, metrics::ProgressStyle::automatic);
  const Recipe r = load_recipe_text(kMinimal, "minimal", {"train.progress=plain"}, false);
  EXPECT_EQ(r.train.progress, metrics::ProgressStyle::plain);
  EXPECT_NE(r.to_yaml().find("progress: plain"), std::string::npos);
  EXPECT_EQ(load_recipe_text(r.to_yaml(), "resolved", {}, false).to_yaml(), r.to_yaml());
  const std::string bad = error_of([] { load_recipe_text(kMinimal, "m", {"train.progress=live"}, false); });
  EXPECT_NE(bad.find("'train.progress': progress style must be 'auto'"), std::string::npos) << bad;
}

TEST(Recipe, TrainingFilesResolveWithoutTheHeldOutOnes) {
  const std::string dir = recipe_dir();
  for (const char* f : {"/a.npy", "/m.yaml"}) std::ofstream(dir + f) << "x";
  Recipe r = load_recipe_text(kMinimal, "audit.yaml",
                              {"model.config=" + dir + "/m.yaml", "data.paths=[" + dir + "/*.npy]",
                               "data.validation_paths=[" + dir + "/held/*.npy]"},
                              false);
  resolve_training_files(r, "audit.yaml");  // the held-out pattern matches nothing and is not looked at
  EXPECT_EQ(r.data.paths, std::vector<std::string>{dir + "/a.npy"});
  r.data.paths = {"missing_here.npy"};
  const std::string missing = error_of([&] { resolve_training_files(r, "audit.yaml"); });
  EXPECT_NE(missing.find("audit.yaml: 'data.paths': missing_here.npy not found (resolved against the current "
                         "directory"),
            std::string::npos)
      << missing;
}

TEST(Recipe, WorkDirDefaultsToNoPackingCacheAndReachesTheLoader) {
  EXPECT_EQ(load_recipe_text(kMinimal, "minimal", {}, false).loader.packing.work_dir, "");
  const Recipe r = load_recipe_text(kMinimal, "minimal", {"data.packing=obfd", "data.work_dir=/scratch/packing"}, false);
  EXPECT_EQ(loader_config(r, model::ModelConfig{}).packing.work_dir, "/scratch/packing");
  const std::string yaml = r.to_yaml();
  EXPECT_NE(yaml.find("work_dir: /scratch/packing"), std::string::npos) << yaml;
  EXPECT_EQ(load_recipe_text(yaml, "resolved", {}, false).loader.packing.work_dir, "/scratch/packing");
}

TEST(Recipe, RemoteDataKeysDefaultToNoCacheAndReachTheLoaderAndTheRemoteFiles) {
  const Recipe defaults = load_recipe_text(kMinimal, "minimal", {}, false);
  EXPECT_EQ(defaults.data.base_dir, "");
  EXPECT_EQ(defaults.remote.cache_dir, "");
  EXPECT_EQ(defaults.remote.cache_bytes, int64_t(100) << 30);
  EXPECT_EQ(defaults.remote.http.timeout_s, 60);
  EXPECT_EQ(defaults.remote.http.retries, 5);
  EXPECT_EQ(defaults.loader.read_ahead, 2);
  const Recipe r = load_recipe_text(kMinimal, "minimal",
                                    {"run.dir=/runs/x", "data.base_dir=https://olmo-data.org",
                                     "data.cache_dir=/scratch/ranges", "data.cache_bytes=4096", "data.http_timeout=2.5",
                                     "data.http_retries=0", "data.read_ahead=0"},
                                    false);
  EXPECT_EQ(loader_config(r, model::ModelConfig{}).read_ahead, 0);
  const data::RemoteConfig remote = remote_config(r);
  EXPECT_EQ(remote.cache_dir, "/scratch/ranges");
  EXPECT_EQ(remote.cache_bytes, 4096);
  EXPECT_EQ(remote.http.timeout_s, 2.5);
  EXPECT_EQ(remote.http.retries, 0);
  EXPECT_EQ(remote.index_path, "/runs/x/remote_files.json");  // a restart finds what the HEADs said
  const Recipe back = load_recipe_text(r.to_yaml(), "resolved", {}, false);
  EXPECT_EQ(back.data.base_dir, "https://olmo-data.org");
  EXPECT_EQ(back.remote.cache_bytes, 4096);
  EXPECT_EQ(back.remote.http.timeout_s, 2.5);
  EXPECT_EQ(back.loader.read_ahead, 0);
  // URLs need not exist locally: they are HEADed when the data is opened.
  Recipe urls = load_recipe_text(kMinimal, "minimal", {"data.paths=[https://olmo-data.org/a.npy]"}, false);
  urls.model.config = "";
  urls.model.init_from = recipe_dir();
  EXPECT_EQ(error_of([&] { resolve_training_files(urls, "urls.yaml"); }), "");
  for (const char* key : {"data.base_dir", "data.cache_dir", "data.cache_bytes", "data.http_timeout",
                         "data.http_retries", "data.read_ahead"}) {
    const auto rules = resume_rules();
    const auto it = std::find_if(rules.begin(), rules.end(), [&](const auto& rule) { return rule.first == key; });
    ASSERT_NE(it, rules.end()) << key;
    EXPECT_EQ(it->second, config::OnResume::neutral) << key << ": where the data is read from, not what";
  }
  auto refused = [](const std::string& override_text) {
    return error_of([&] { load_recipe_text(kMinimal, "bad.yaml", {override_text}, false); });
  };
  EXPECT_NE(refused("data.http_timeout=0").find("'data.http_timeout' must be in (0, 3600]"), std::string::npos);
  EXPECT_NE(refused("data.cache_bytes=0").find("data.cache_bytes"), std::string::npos);
  EXPECT_NE(refused("data.http_retries=-1").find("data.http_retries"), std::string::npos);
  EXPECT_NE(refused("data.read_ahead=-1").find("data.read_ahead"), std::string::npos);
}

TEST(Recipe, PackingKeysDefaultToPlainChunksAndReachTheLoader) {
  // OLMo-core's defaults: no packing, groups of one file, no source permutation, long documents truncated.
  const Recipe defaults = load_recipe_text(kMinimal, "minimal", {}, false);
  EXPECT_EQ(defaults.loader.packing.kind, data::Packing::none);
  EXPECT_EQ(defaults.loader.packing.source_group_size, 1);
  EXPECT_EQ(defaults.loader.source_permutation_seed, std::nullopt);
  EXPECT_EQ(defaults.loader.packing.long_doc_strategy, data::LongDocStrategy::truncate);
  EXPECT_EQ(defaults.loader.packing.document_boundaries, data::DocumentBoundaries::eos);
  const Recipe r = load_recipe_text(kMinimal, "minimal",
                                    {"data.packing=obfd", "data.source_group_size=8",
                                     "data.source_permutation_seed=123", "data.long_doc_strategy=fragment",
                                     "data.document_boundaries=metadata"},
                                    false);
  model::ModelConfig model;
  const data::LoaderConfig loader = loader_config(r, model);
  EXPECT_EQ(loader.packing.kind, data::Packing::obfd);
  EXPECT_EQ(loader.packing.source_group_size, 8);
  EXPECT_EQ(loader.source_permutation_seed, 123);
  EXPECT_EQ(loader.packing.long_doc_strategy, data::LongDocStrategy::fragment);
  EXPECT_EQ(loader.packing.document_boundaries, data::DocumentBoundaries::metadata);
  const std::string yaml = r.to_yaml();
  for (const char* line : {"packing: obfd", "source_group_size: 8", "source_permutation_seed: 123",
                           "long_doc_strategy: fragment", "document_boundaries: metadata"})
    EXPECT_NE(yaml.find(line), std::string::npos) << line << "\n" << yaml;
  EXPECT_EQ(load_recipe_text(yaml, "resolved", {}, false).to_yaml(), yaml);
  const std::string plain = defaults.to_yaml();  // none round-trips as null
  EXPECT_EQ(load_recipe_text(plain, "resolved", {}, false).loader.source_permutation_seed, std::nullopt);
}

TEST(Recipe, ContextParallelKeysDefaultToOffAndReachTheStep) {
  const Recipe defaults = load_recipe_text(kMinimal, "minimal", {}, false);
  EXPECT_EQ(defaults.step.context.degree, 1);
  EXPECT_EQ(defaults.step.context.head_stride, 0);
  const Recipe r = load_recipe_text(kMinimal, "minimal",
                                    {"train.context_parallel=2", "train.cp_head_stride=1", "data.seq_len=256",
                                     "data.micro_batch_size=1"},
                                    false);
  const StepConfig step = step_config(r);
  EXPECT_EQ(step.context.degree, 2);
  EXPECT_EQ(step.context.head_stride, 1);
  const std::string yaml = r.to_yaml();
  for (const char* line : {"context_parallel: 2", "cp_head_stride: 1"})
    EXPECT_NE(yaml.find(line), std::string::npos) << line << "\n" << yaml;
  EXPECT_EQ(load_recipe_text(yaml, "resolved", {}, false).to_yaml(), yaml);
}

TEST(Recipe, ContextParallelRefusesWhatItCannotSplit) {
  auto load = [](std::vector<std::string> overrides) {
    return error_of([&] { load_recipe_text(kMinimal, "bad.yaml", overrides, false); });
  };
  const std::string zero = load({"train.context_parallel=0"});
  EXPECT_NE(zero.find("train.context_parallel"), std::string::npos) << zero;
  EXPECT_NE(load({"train.cp_head_stride=-1"}).find("train.cp_head_stride"), std::string::npos);
  // Each rank's slice a multiple of 128 tokens: 256 splits over 2 ranks, not over 4.
  const std::string seq = load({"train.context_parallel=4", "data.seq_len=256", "data.micro_batch_size=1"});
  EXPECT_NE(seq.find("'data.seq_len' (256) must be a multiple of 512 with train.context_parallel=4"),
            std::string::npos)
      << seq;
  const std::string batch = load({"train.context_parallel=2", "data.seq_len=256"});
  EXPECT_NE(batch.find("'data.micro_batch_size' must be 1 with train.context_parallel=2"), std::string::npos) << batch;
  EXPECT_EQ(load({"train.context_parallel=2", "data.seq_len=256", "data.micro_batch_size=1"}), "");
}

TEST(Recipe, ErrorsNameTheKey) {
  auto load = [](const std::string& text, std::vector<std::string> overrides = {}) {
    return error_of([&] { load_recipe_text(text, "bad.yaml", overrides, false); });
  };
  auto names = [](const std::string& message, const std::string& key) {
    return message.find(key) != std::string::npos;
  };
  EXPECT_TRUE(names(load(kMinimal + "optim: {learning_rate: 1}\n"), "optim.learning_rate"));
  EXPECT_TRUE(names(load(kMinimal + "optimizer: {lr: 1}\n"), "optimizer"));
  EXPECT_TRUE(names(load(kMinimal, {"optim.lr=abc"}), "optim.lr"));
  EXPECT_TRUE(names(load(kMinimal, {"data.seq_len=1.5"}), "data.seq_len"));
  EXPECT_TRUE(names(load(kMinimal, {"optim.betas={a: 1}"}), "optim.betas"));
  EXPECT_TRUE(names(load(kMinimal, {"optim.betas=[0.9]"}), "optim.betas"));
  EXPECT_TRUE(names(load(kMinimal, {"train.precision=fp8"}), "train.precision"));
  EXPECT_TRUE(names(load(kMinimal, {"train.device=tpu"}), "train.device"));
  EXPECT_TRUE(names(load(kMinimal, {"train.remat=partial"}), "train.remat"));
  EXPECT_TRUE(names(load(kMinimal, {"schedule.type=cyclic"}), "schedule.type"));
  EXPECT_TRUE(names(load(kMinimal, {"optim.nope=1"}), "optim.nope"));
  EXPECT_TRUE(names(load(kMinimal, {"optim.lr"}), "optim.lr"));
  EXPECT_TRUE(names(load(kMinimal, {"train.stop_at=101"}), "train.stop_at"));
  EXPECT_TRUE(names(load(kMinimal, {"schedule.warmup_steps=100"}), "warmup_steps"));
  std::string batch = load(kMinimal, {"data.global_batch_size=10"});
  EXPECT_TRUE(names(batch, "data.global_batch_size") && names(batch, "data.micro_batch_size")) << batch;
  EXPECT_TRUE(names(load(kMinimal, {"data.mix_file=mix.txt"}), "data.mix_file"));
  EXPECT_TRUE(names(load(kMinimal, {"eval.every=10"}), "data.validation_paths"));
  EXPECT_TRUE(names(load(kMinimal, {"data.packing=best_fit"}), "data.packing"));
  EXPECT_TRUE(names(load(kMinimal, {"data.long_doc_strategy=split"}), "data.long_doc_strategy"));
  EXPECT_TRUE(names(load(kMinimal, {"data.document_boundaries=bos"}), "data.document_boundaries"));
  const std::string unpacked = load(kMinimal, {"data.document_boundaries=metadata"});
  EXPECT_TRUE(names(unpacked, "data.document_boundaries") && names(unpacked, "data.packing: obfd")) << unpacked;
  EXPECT_TRUE(names(load(kMinimal, {"data.source_group_size=0"}), "data.source_group_size"));
  EXPECT_TRUE(names(load(kMinimal, {"data.source_permutation_seed=abc"}), "data.source_permutation_seed"));
  const std::string pow2 = load(kMinimal, {"data.packing=obfd", "data.seq_len=24"});
  EXPECT_TRUE(names(pow2, "data.seq_len") && names(pow2, "power of two")) << pow2;
  std::string missing = error_of([] { load_recipe_text(kMinimal, "bad.yaml", {"model.config=/nonexistent/m.yaml"}); });
  EXPECT_TRUE(names(missing, "model.config") && names(missing, "/nonexistent/m.yaml")) << missing;
  EXPECT_TRUE(names(error_of([] { load_recipe("/nonexistent/recipe.yaml"); }), "/nonexistent/recipe.yaml"));
}

// Reliability review D13: an error an override caused names the override, not the recipe file.
TEST(Recipe, ErrorsNameTheOverrideThatCausedThem) {
  auto load = [](std::vector<std::string> overrides) {
    return error_of([&] { load_recipe_text(kMinimal, "bad.yaml", overrides, false); });
  };
  EXPECT_TRUE(load({"data.global_batch_size=10"}).starts_with("override 'data.global_batch_size=10': "))
      << load({"data.global_batch_size=10"});
  EXPECT_TRUE(load({"data.micro_batch_size=3"}).starts_with("override 'data.micro_batch_size=3': "));
  EXPECT_TRUE(load({"train.seed=-1"}).starts_with("override 'train.seed=-1': 'train.seed'"));
  EXPECT_TRUE(load({"schedule.warmup_steps=100"}).starts_with("override 'schedule.warmup_steps=100': "));
  // The last override of a key is the one named; a bad value in the file itself still names the file.
  EXPECT_TRUE(load({"train.seed=-1", "train.seed=-2"}).starts_with("override 'train.seed=-2': "));
  std::string text = kMinimal;
  text.replace(text.find("max_steps: 100"), 14, "max_steps: 100, seed: -1");
  const std::string file = error_of([&] { load_recipe_text(text, "bad.yaml", {}, false); });
  EXPECT_TRUE(file.starts_with("bad.yaml: 'train.seed'")) << file;
}

// Reliability review case 87: an unclosed quote swallowed the keys after it, and the error named a missing key.
TEST(Recipe, AnUnclosedQuoteIsNamed) {
  const std::string message =
      error_of([] { load_recipe_text("run:\n  dir: \"runs/x\nmodel:\n  config: m.yaml\n", "bad.yaml", {}, false); });
  EXPECT_TRUE(message.starts_with("bad.yaml: 'run.dir' holds \"runs/x model: config: m.yaml \", keys and all: is a "
                                  "quote left open?"))
      << message;
}

TEST(Recipe, ToYamlRoundTrips) {
  Recipe r = load_recipe(recipe_path("olmo3_7b_stage1.yaml"), {"optim.lr=0.1234567890123"}, false);
  std::string yaml = r.to_yaml();
  Recipe back = load_recipe_text(yaml, "resolved", {}, false);
  EXPECT_EQ(back.to_yaml(), yaml);
  EXPECT_EQ(back.step.schedule.lr, 0.1234567890123);
  EXPECT_EQ(back.schedule.t_max_tokens, 5e12);
  EXPECT_EQ(back.data.validation_paths, r.data.validation_paths);
  EXPECT_NE(yaml.find("type: olmo3_stitched"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace replica::train
