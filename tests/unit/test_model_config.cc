// ModelConfig parsing (YAML and HF JSON), validation errors, the parameter table, init and FLOP counting.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "replica/core/error.h"
#include "replica/model/config.h"
#include "replica/model/flops.h"
#include "replica/model/params.h"

namespace replica::model {
namespace {

std::string config_path(const std::string& name) { return std::string(REPLICA_SOURCE_DIR) + "/configs/models/" + name; }

TEST(ModelConfig, Olmo3_7bHasThePublishedShape) {
  ModelConfig c = load_model_config(config_path("olmo3_7b.yaml"));
  EXPECT_EQ(c.d_model, 4096);
  EXPECT_EQ(c.n_layers, 32);
  EXPECT_EQ(c.n_heads, 32);
  EXPECT_EQ(c.n_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.ffn_hidden, 11008);
  EXPECT_EQ(c.vocab_size, 100352);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.norm_eps, 1e-6);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.norm_placement, NormPlacement::reordered);
  for (int64_t l = 0; l < 32; l++) EXPECT_EQ(c.window(l), (l + 1) % 4 == 0 ? 0 : 4096) << "layer " << l;
  EXPECT_EQ(ParamTable(c).count(), 7298617344u);
}

TEST(ModelConfig, Olmo3_32bUsesGqa) {
  ModelConfig c = load_model_config(config_path("olmo3_32b.yaml"));
  EXPECT_EQ(c.n_kv_heads, 8);
  EXPECT_EQ(c.n_heads, 40);
  ParamTable t(c);
  EXPECT_EQ(t.at("model.layers.0.self_attn.k_proj.weight").shape, (std::vector<int64_t>{1024, 5120}));
  EXPECT_EQ(t.at("model.layers.0.self_attn.k_norm.weight").shape, (std::vector<int64_t>{1024}));
}

TEST(ModelConfig, HfJsonVariants) {
  nlohmann::json j = {{"model_type", "llama"}, {"vocab_size", 64}, {"hidden_size", 32}, {"intermediate_size", 48},
                      {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                      {"tie_word_embeddings", true}, {"rope_theta", 10000.0}, {"torch_dtype", "float32"}};
  ModelConfig c = model_config_from_json(j, "config.json");
  EXPECT_EQ(c.norm_placement, NormPlacement::pre);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.window(0), 0);
  ParamTable t(c);
  EXPECT_TRUE(t.has("model.layers.1.input_layernorm.weight"));
  EXPECT_FALSE(t.has("lm_head.weight"));
  EXPECT_EQ(t.lm_head, t.embed);
  // Round trip through the HF config writer.
  ModelConfig again = model_config_from_json(model_config_to_hf_json(c), "round trip");
  EXPECT_EQ(ParamTable(again).count(), t.count());
  EXPECT_EQ(again.norm_placement, NormPlacement::pre);
}

TEST(ModelConfig, AbsentTensorsHaveNoOffset) {
  nlohmann::json j = {{"vocab_size", 64}, {"hidden_size", 32}, {"intermediate_size", 48},
                      {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"sliding_window", 8}};
  const ParamTable olmo(model_config_from_json(j, "olmo.json"));
  EXPECT_EQ(olmo.blocks[1].q_norm, olmo.at("model.layers.1.self_attn.q_norm.weight").offset);
  EXPECT_EQ(olmo.blocks[1].k_norm, olmo.at("model.layers.1.self_attn.k_norm.weight").offset);
  EXPECT_FALSE(olmo.tied());
  EXPECT_EQ(olmo.lm_head_range().begin, olmo.head_range().begin);
  j["qk_norm"] = false;
  j["tie_word_embeddings"] = true;
  const ParamTable plain(model_config_from_json(j, "no_qk_norm.json"));
  for (const BlockOffsets& b : plain.blocks) {
    EXPECT_FALSE(b.q_norm.has_value());
    EXPECT_FALSE(b.k_norm.has_value());
  }
  EXPECT_TRUE(plain.tied());
  EXPECT_EQ(plain.lm_head_range().end, plain.embed_range().end);
}

void expect_config_error(nlohmann::json j, const std::string& fragment) {
  try {
    model_config_from_json(j, "bad.json");
    FAIL() << "expected an error mentioning " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, BadConfigsNameTheKey) {
  nlohmann::json good = {{"vocab_size", 64}, {"hidden_size", 32}, {"intermediate_size", 48},
                         {"num_hidden_layers", 4}, {"num_attention_heads", 4}, {"sliding_window", 8}};
  EXPECT_NO_THROW(model_config_from_json(good, "good.json"));
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json j = good;
    j[key] = value;
    return j;
  };
  expect_config_error(with("hidden_sise", 32), "unknown model config key 'hidden_sise'");
  expect_config_error(with("num_key_value_heads", 3), "num_key_value_heads");
  expect_config_error(with("num_hidden_layers", 0), "num_hidden_layers");
  expect_config_error(with("layer_types", {"full_attention"}), "layer_types has 1 entries");
  expect_config_error(with("hidden_size", "big"), "'hidden_size'");
  expect_config_error(with("sliding_window", 0), "sliding_window");
  expect_config_error(with("norm_placement", "post"), "norm_placement");
  expect_config_error(with("head_dim", 7), "head_dim");
}

TEST(ModelConfig, Olmo3_7bStage3IsStage2WithYarnOnTheFullLayers) {
  const ModelConfig c = load_model_config(config_path("olmo3_7b_stage3.yaml"));
  ASSERT_TRUE(c.rope_scaling.has_value());
  EXPECT_EQ(*c.rope_scaling, (YarnScaling{8.0, 8192, 32.0, 1.0, 1.2079441541679836}));
  EXPECT_EQ(c.max_seq_len, 65536);
  for (int64_t l = 0; l < 32; l++) EXPECT_EQ(c.yarn_layer(l), (l + 1) % 4 == 0) << "layer " << l;
  // Every other key, and so every weight, is stage 2's.
  nlohmann::json stage3 = model_config_to_hf_json(c);
  nlohmann::json stage2 = model_config_to_hf_json(load_model_config(config_path("olmo3_7b.yaml")));
  EXPECT_EQ(stage2["rope_scaling"], nullptr);
  for (const char* key : {"rope_scaling", "max_position_embeddings"}) {
    stage3.erase(key);
    stage2.erase(key);
  }
  EXPECT_EQ(stage3, stage2);
}

// A small olmo3 config with `extra` keys.
nlohmann::json small_with(const nlohmann::json& extra) {
  nlohmann::json j = {
      {"vocab_size", 64},         {"hidden_size", 32},   {"intermediate_size", 48},         {"num_hidden_layers", 4},
      {"num_attention_heads", 4}, {"sliding_window", 8}, {"max_position_embeddings", 65536}};
  if (!extra.is_null()) j.update(extra);  // {} is null in nlohmann's initializer lists
  return j;
}

const nlohmann::json kReleasedYarn = {{"rope_type", "yarn"}, {"factor", 8.0},
                                      {"original_max_position_embeddings", 8192}, {"beta_fast", 32.0},
                                      {"beta_slow", 1.0}, {"attention_factor", 1.2079441541679836}};

TEST(ModelConfig, RopeScalingReadsEveryHfForm) {
  const YarnScaling released{8.0, 8192, 32.0, 1.0, 1.2079441541679836};
  auto scaling = [](const nlohmann::json& extra) {
    return model_config_from_json(small_with(extra), "c").rope_scaling;
  };
  EXPECT_FALSE(scaling({}).has_value());
  EXPECT_FALSE(scaling({{"rope_scaling", nullptr}}).has_value());
  EXPECT_FALSE(scaling({{"rope_scaling", {{"rope_type", "default"}}}}).has_value());
  EXPECT_EQ(scaling({{"rope_scaling", kReleasedYarn}}), released);  // transformers 4.5x, the released config.json
  nlohmann::json flat = kReleasedYarn;
  flat["rope_theta"] = 250000.0;
  EXPECT_EQ(scaling({{"rope_parameters", flat}}), released);  // 5.x, one entry
  EXPECT_EQ(model_config_from_json(small_with({{"rope_parameters", flat}}), "c").rope_theta, 250000.0);
  const nlohmann::json per_type = {{"full_attention", flat}, {"sliding_attention", {{"rope_type", "default"},
                                                                                     {"rope_theta", 250000.0}}}};
  EXPECT_EQ(scaling({{"rope_parameters", per_type}}), released);  // 5.x per layer type (Olmo3 after #46911)
  EXPECT_EQ(scaling({{"rope_scaling", kReleasedYarn}, {"rope_parameters", per_type}}), released);
  // HF's defaults: "type" for rope_type, beta 32 and 1, the original context = max_position_embeddings, the
  // attention factor 0.1·ln(factor) + 1.
  const std::optional<YarnScaling> minimal = scaling({{"rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}}});
  ASSERT_TRUE(minimal.has_value());
  EXPECT_EQ(*minimal, (YarnScaling{4.0, 65536, 32.0, 1.0, 0.1 * std::log(4.0) + 1.0}));
}

TEST(ModelConfig, RopeScalingRoundTripsThroughHfJsonAndYaml) {
  const ModelConfig c = model_config_from_json(small_with({{"rope_scaling", kReleasedYarn}}), "c");
  const nlohmann::json hf = model_config_to_hf_json(c);
  EXPECT_EQ(hf["rope_scaling"], kReleasedYarn);  // what export-hf writes: the released block, key for key
  const ModelConfig again = model_config_from_json(hf, "round trip");
  EXPECT_EQ(again.rope_scaling, c.rope_scaling);
  EXPECT_EQ(model_config_to_hf_json(again), hf);
}

TEST(ModelConfig, BadRopeScalingNamesTheKey) {
  auto yarn_with = [](const char* key, nlohmann::json value) {
    nlohmann::json block = kReleasedYarn;
    block[key] = value;
    return small_with({{"rope_scaling", block}});
  };
  expect_config_error(yarn_with("rope_type", "linear"), "'rope_scaling.rope_type' is 'linear'");
  expect_config_error(small_with({{"rope_scaling", {{"factor", 8.0}}}}), "'rope_scaling.rope_type' is ''");
  expect_config_error(yarn_with("factor", 0.0), "rope_scaling.factor must be positive");
  expect_config_error(yarn_with("factor", -2.0), "rope_scaling.factor must be positive");
  expect_config_error(yarn_with("factor", nullptr), "'rope_scaling.factor' is required");
  expect_config_error(yarn_with("original_max_position_embeddings", 0),
                      "rope_scaling.original_max_position_embeddings");
  expect_config_error(yarn_with("beta_slow", 0.0), "beta_slow");
  expect_config_error(yarn_with("attention_factor", -1.0), "rope_scaling.attention_factor");
  // Review 2026-12-03 case 73: transformers' rope validation warns on these; replica refuses them.
  expect_config_error(yarn_with("factor", 0.5), "expected a context extension in [1,");
  expect_config_error(yarn_with("factor", 1e300), "expected a context extension in [1,");
  expect_config_error(yarn_with("beta_fast", 1.0), "must be larger than beta_slow");
  expect_config_error(yarn_with("original_max_position_embeddings", 1000000),
                      "exceeds max_position_embeddings (65536)");
  expect_config_error(small_with({{"max_position_embeddings", int64_t(1) << 62}}), "more than replica supports");
  expect_config_error(small_with({{"eos_token_id", int64_t(1000000000000)}}), "'eos_token_id' is 1000000000000");
  expect_config_error(yarn_with("mscale", 1.0), "unknown key 'rope_scaling.mscale'");
  expect_config_error(yarn_with("truncate", false), "'rope_scaling.truncate' is false");
  expect_config_error(yarn_with("factor", "eight"), "'factor'");
  expect_config_error(small_with({{"rope_scaling", "yarn"}}), "'rope_scaling' must be a mapping");
  expect_config_error(small_with({{"rope_parameters", {{"sliding_attention", kReleasedYarn}}}}),
                      "applies YaRN to the full-attention layers only");
  expect_config_error(small_with({{"rope_parameters",
                                   {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e5}}},
                                    {"sliding_attention", {{"rope_type", "default"}}}}}}),
                      "one rope_theta");
  expect_config_error(small_with({{"rope_parameters", {{"global", kReleasedYarn}}}}), "'rope_parameters.global'");
  nlohmann::json other = kReleasedYarn;
  other["factor"] = 4.0;
  expect_config_error(small_with({{"rope_scaling", kReleasedYarn}, {"rope_parameters", other}}),
                      "rope_scaling and rope_parameters give different YaRN settings");
}

// Reliability review D12 and D13: a config.json that leaves keys out gets transformers' defaults for its model_type,
// an integer key does not take a fraction, and save_pretrained's bookkeeping keys are not refused.
TEST(ModelConfig, MissingKeysTakeTransformersDefaultsPerModelType) {
  const nlohmann::json sizes = {{"vocab_size", 64}, {"hidden_size", 32}, {"intermediate_size", 48},
                                {"num_hidden_layers", 4}, {"num_attention_heads", 4}};
  struct Expected {
    const char* model_type;
    double rms_norm_eps, rope_theta;
    int64_t max_position_embeddings, sliding_window;
  };
  // Olmo3Config, Olmo2Config and LlamaConfig (transformers/models/*/configuration_*.py).
  for (const Expected& e : {Expected{"olmo3", 1e-5, 10000.0, 2048, 4096}, Expected{"olmo2", 1e-5, 10000.0, 2048, 0},
                            Expected{"llama", 1e-6, 10000.0, 2048, 0}}) {
    nlohmann::json j = sizes;
    j["model_type"] = e.model_type;
    const ModelConfig c = model_config_from_json(j, "config.json");
    EXPECT_EQ(c.norm_eps, e.rms_norm_eps) << e.model_type;
    EXPECT_EQ(c.rope_theta, e.rope_theta) << e.model_type;
    EXPECT_EQ(c.max_seq_len, e.max_position_embeddings) << e.model_type;
    EXPECT_EQ(c.sliding_window, e.sliding_window) << e.model_type;
  }
}

TEST(ModelConfig, IntegersAreIntegralAndRequiredSizesAreNamedWhenMissing) {
  const nlohmann::json good = {{"vocab_size", 64}, {"hidden_size", 32}, {"intermediate_size", 48},
                               {"num_hidden_layers", 4}, {"num_attention_heads", 4}};
  nlohmann::json j = good;
  j["hidden_size"] = 128.7;
  expect_config_error(j, "bad.json: key 'hidden_size' has value 128.7 of the wrong type (expected an integer)");
  j = good;
  j["qk_norm"] = 1;
  expect_config_error(j, "key 'qk_norm' has value 1 of the wrong type (expected true or false)");
  j = good;
  j["rms_norm_eps"] = std::numeric_limits<double>::infinity();
  expect_config_error(j, "rms_norm_eps");
  j = good;
  j.erase("hidden_size");
  expect_config_error(j, "bad.json: missing 'hidden_size' (a positive integer)");
  j = good;
  j["_name_or_path"] = "allenai/Olmo-3-1025-7B";
  j["_commit_hash"] = "abc";
  j["output_hidden_states"] = false;
  EXPECT_NO_THROW(model_config_from_json(j, "config.json"));
}

TEST(Init, TruncatedNormalIndependentOfThreads) {
  ModelConfig c = load_model_config(config_path("olmo3_tiny.yaml"));
  ParamTable t(c);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> p(t.total(), 0.0f);
    init_params(c, t, 1234, p.data());
    return p;
  };
  std::vector<float> one = run(1), two = run(2);
  omp_set_num_threads(2);
  EXPECT_EQ(one, two);
  const ParamEntry& wq = t.at("model.layers.0.self_attn.q_proj.weight");
  double sum = 0, sum_sq = 0, max_abs = 0;
  for (size_t i = 0; i < wq.numel; i++) {
    double x = one[wq.offset + i];
    sum += x;
    sum_sq += x * x;
    max_abs = std::max(max_abs, std::fabs(x));
  }
  const double n = double(wq.numel), std = std::sqrt(sum_sq / n);
  EXPECT_NEAR(sum / n, 0.0, 0.002);
  EXPECT_NEAR(std, 0.02 * 0.9866, 0.0005);  // the std of N(0, σ) truncated at ±3σ is 0.9866σ
  EXPECT_LE(max_abs, 0.06);
  EXPECT_EQ(one[t.at("model.layers.0.post_attention_layernorm.weight").offset], 1.0f);
  std::vector<float> other(t.total(), 0.0f);
  init_params(c, t, 1235, other.data());
  EXPECT_NE(other[wq.offset], one[wq.offset]);
}

TEST(Flops, CountsMatmulsAndCausalWindowedAttention) {
  ModelConfig c = load_model_config(config_path("olmo3_7b.yaml"));
  EXPECT_EQ(matmul_params(c), 6887047168);
  EXPECT_DOUBLE_EQ(mean_visible_keys(8, 0), 4.5);
  EXPECT_DOUBLE_EQ(mean_visible_keys(8, 3), (1 + 2 + 3 + 3 * 5) / 8.0);
  EXPECT_DOUBLE_EQ(mean_visible_keys(8, 100), 4.5);
  // At T = 8192: 24 sliding layers see ≈ 3072.4 keys per query on average, 8 full layers 4096.5.
  const double attention = 12.0 * 4096 * (24 * mean_visible_keys(8192, 4096) + 8 * 4096.5);
  EXPECT_DOUBLE_EQ(training_flops_per_token(c, 8192), 6.0 * 6887047168 + attention);
}

}  // namespace
}  // namespace replica::model
