// ModelConfig parsing (HF config.json and YAML model files share Olmo3Config's keys) and validation.
#include "replica/model/config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <type_traits>

#include "replica/core/config_fields.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/parse_number.h"

namespace replica::model {

using nlohmann::json;

void ModelConfig::validate(const std::string& source) const {
  auto positive = [&](int64_t v, const char* key) {
    check(v > 0, "{}: '{}' must be a positive integer, got {}", source, key, v);
  };
  positive(vocab_size, "vocab_size");
  positive(d_model, "hidden_size");
  positive(ffn_hidden, "intermediate_size");
  positive(n_layers, "num_hidden_layers");
  positive(n_heads, "num_attention_heads");
  positive(n_kv_heads, "num_key_value_heads");
  positive(head_dim, "head_dim");
  positive(max_seq_len, "max_position_embeddings");
  // Positions are int32 throughout (RoPE tables, document offsets); a larger context would only fail later, as an
  // allocation no machine can make.
  check(max_seq_len <= kMaxPositions, "{}: 'max_position_embeddings' is {}, more than replica supports ({})", source,
        max_seq_len, kMaxPositions);
  for (auto [id, key] : {std::pair{eos_token_id, "eos_token_id"}, std::pair{pad_token_id, "pad_token_id"}})
    check(id >= 0 && id <= INT32_MAX, "{}: '{}' is {}, expected a token id in [0, 2^31 - 1]", source, key, id);
  check(n_heads % n_kv_heads == 0, "{}: num_attention_heads ({}) must be a multiple of num_key_value_heads ({})",
        source, n_heads, n_kv_heads);
  check(head_dim % 2 == 0, "{}: head_dim must be even for RoPE, got {}", source, head_dim);
  check(int64_t(sliding.size()) == n_layers, "{}: layer_types has {} entries, expected num_hidden_layers = {}", source,
        sliding.size(), n_layers);
  bool any_sliding = false;
  for (bool s : sliding) any_sliding |= s;
  check(!any_sliding || sliding_window > 0, "{}: layer_types has sliding_attention layers but sliding_window is {}",
        source, sliding_window);
  check(norm_eps > 0, "{}: rms_norm_eps must be positive", source);
  check(rope_theta > 0, "{}: rope_theta must be positive", source);
  if (rope_scaling) {
    const YarnScaling& y = *rope_scaling;
    check(y.factor > 0, "{}: rope_scaling.factor must be positive, got {}", source, y.factor);
    // YaRN stretches a context by `factor`: below 1 it would shrink it, and transformers' rope validation warns.
    check(y.factor >= 1 && y.factor <= kMaxPositions,
          "{}: rope_scaling.factor is {}, expected a context extension in [1, {}]", source, y.factor, kMaxPositions);
    positive(y.original_max_position_embeddings, "rope_scaling.original_max_position_embeddings");
    check(y.original_max_position_embeddings <= max_seq_len,
          "{}: rope_scaling.original_max_position_embeddings ({}) exceeds max_position_embeddings ({}): the "
          "extended context must be the longer one",
          source, y.original_max_position_embeddings, max_seq_len);
    check(y.beta_fast > 0 && y.beta_slow > 0,
          "{}: rope_scaling.beta_fast and beta_slow must be positive, got {} and {}", source, y.beta_fast, y.beta_slow);
    check(y.beta_fast > y.beta_slow,
          "{}: rope_scaling.beta_fast ({}) must be larger than beta_slow ({}) (YaRN's ramp runs from beta_slow to "
          "beta_fast rotations)",
          source, y.beta_fast, y.beta_slow);
    check(y.attention_factor > 0, "{}: rope_scaling.attention_factor must be positive, got {}", source,
          y.attention_factor);
  }
}

// The keys we understand. HF bookkeeping keys that do not change the math are accepted and ignored, as are keys
// starting with '_' (`_name_or_path`, `_commit_hash`: save_pretrained's records of where a config came from).
static const std::set<std::string> kModelKeys = {
    "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "rope_parameters", "rope_scaling",
    "sliding_window", "layer_types", "tie_word_embeddings", "max_position_embeddings", "norm_placement", "qk_norm",
    "initializer_range", "eos_token_id", "pad_token_id", "bos_token_id", "hidden_act", "attention_bias",
    "attention_dropout", "architectures", "torch_dtype", "dtype", "transformers_version", "use_cache", "name",
    "mlp_bias", "pretraining_tp", "output_attentions", "output_hidden_states", "return_dict", "torchscript",
    "id2label", "label2id", "problem_type", "tokenizer_class", "auto_map"};

// The defaults transformers' config classes give a key that config.json leaves out, where they change the math.
// The sizes have no default here (a config without them describes no model); the token ids keep dolma2's.
struct HfDefaults {
  double rms_norm_eps;
  double rope_theta;
  int64_t max_position_embeddings;
  int64_t sliding_window;  // Olmo3Config only; 0 where no layer slides
};

static HfDefaults hf_defaults(const std::string& model_type) {
  if (model_type == "olmo3") return {1e-5, 10000.0, 2048, 4096};  // Olmo3Config
  if (model_type == "olmo2") return {1e-5, 10000.0, 2048, 0};     // Olmo2Config
  return {1e-6, 10000.0, 2048, 0};                                 // LlamaConfig
}

template <typename T>
static T get(const json& j, const char* key, const std::string& source, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  const json& v = j[key];
  // nlohmann converts 128.7 to 128 and true to 1; a config key of the wrong kind is refused instead.
  const bool kind_ok = std::is_same_v<T, bool>            ? v.is_boolean()
                       : std::is_same_v<T, std::string>   ? v.is_string()
                       : std::is_floating_point_v<T>      ? v.is_number()
                       : v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX));
  check(kind_ok, "{}: key '{}' has value {} of the wrong type (expected {})", source, key, v.dump(),
        std::is_same_v<T, bool> ? "true or false" : std::is_same_v<T, std::string> ? "a string"
        : std::is_floating_point_v<T> ? "a number" : "an integer");
  if constexpr (std::is_floating_point_v<T>)
    check(std::isfinite(v.get<T>()), "{}: key '{}' must be a finite number, got {}", source, key, v.dump());
  return v.get<T>();
}

// A size the config must give: missing is its own error, not "must be positive, got 0".
static int64_t required(const json& j, const char* key, const std::string& source) {
  check(j.contains(key) && !j[key].is_null(), "{}: missing '{}' (a positive integer)", source, key);
  return get<int64_t>(j, key, source, 0);
}

// One rope block as HF writes it: rope_scaling {"rope_type" (or the older "type"), factor, ...}, or a rope_parameters
// entry, which also carries rope_theta. `key` names the block in errors. Returns the YaRN settings, or none for
// rope_type "default"; the block's rope_theta, if any, goes to `theta`.
static std::optional<YarnScaling> read_rope_block(const json& block, const std::string& key, int64_t max_positions,
                                                  double& theta, const std::string& source) {
  check(block.is_object(), "{}: '{}' must be a mapping or null, got {}", source, key, block.dump());
  static const std::set<std::string> keys = {"rope_type", "type", "rope_theta", "factor",
                                             "original_max_position_embeddings", "beta_fast", "beta_slow",
                                             "attention_factor", "truncate"};
  for (auto& [name, value] : block.items())
    check(keys.count(name) != 0, "{}: unknown key '{}.{}' (replica reads YaRN's factor, "
          "original_max_position_embeddings, beta_fast, beta_slow, attention_factor)", source, key, name);
  theta = get<double>(block, "rope_theta", source, theta);
  const std::string type = get<std::string>(block, "rope_type", source, get<std::string>(block, "type", source, ""));
  check(type == "default" || type == "yarn", "{}: '{}.rope_type' is '{}'; replica supports 'yarn' (or 'default', no "
        "scaling)", source, key, type);
  if (type == "default") return std::nullopt;
  // OLMo-core always rounds the ramp's ends to whole dimensions, which is HF's truncate=true.
  check(get<bool>(block, "truncate", source, true), "{}: '{}.truncate' is false; replica computes YaRN as OLMo-core "
        "does, with the correction range rounded to whole dimensions (truncate: true)", source, key);
  check(block.contains("factor") && !block["factor"].is_null(), "{}: '{}.factor' is required for YaRN", source, key);
  YarnScaling y;
  y.factor = get<double>(block, "factor", source, 0.0);
  y.original_max_position_embeddings =
      get<int64_t>(block, "original_max_position_embeddings", source, max_positions);
  y.beta_fast = get<double>(block, "beta_fast", source, 32.0);
  y.beta_slow = get<double>(block, "beta_slow", source, 1.0);
  y.attention_factor = get<double>(block, "attention_factor", source,
                                   y.factor > 0 ? yarn_default_attention_factor(y.factor) : 0.0);
  return y;
}

// rope_theta and the YaRN scaling of the full-attention layers, from any of HF's forms: transformers 4.5x writes
// rope_theta + rope_scaling (null = none); 5.x writes rope_parameters, flat or per layer type
// ({"full_attention": {...}, "sliding_attention": {...}}). Sliding layers keep plain RoPE (OLMo-core), so a scaled
// sliding_attention entry is refused rather than silently dropped.
static void read_rope(const json& j, ModelConfig& c, double default_theta, const std::string& source) {
  c.rope_theta = get<double>(j, "rope_theta", source, default_theta);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    c.rope_scaling = read_rope_block(j["rope_scaling"], "rope_scaling", c.max_seq_len, c.rope_theta, source);
  if (!j.contains("rope_parameters") || j["rope_parameters"].is_null()) return;
  const json& rp = j["rope_parameters"];
  std::optional<YarnScaling> scaling;
  if (rp.is_object() && (rp.contains("full_attention") || rp.contains("sliding_attention"))) {
    for (auto& [name, value] : rp.items())
      check(name == "full_attention" || name == "sliding_attention",
            "{}: unknown key 'rope_parameters.{}' (expected full_attention and sliding_attention)", source, name);
    double sliding_theta = c.rope_theta;
    if (rp.contains("sliding_attention"))
      check(!read_rope_block(rp["sliding_attention"], "rope_parameters.sliding_attention", c.max_seq_len,
                             sliding_theta, source),
            "{}: 'rope_parameters.sliding_attention' is scaled; replica (as OLMo-core) applies YaRN to the "
            "full-attention layers only", source);
    if (rp.contains("full_attention"))
      scaling = read_rope_block(rp["full_attention"], "rope_parameters.full_attention", c.max_seq_len, c.rope_theta,
                                source);
    check(sliding_theta == c.rope_theta, "{}: rope_parameters gives sliding_attention rope_theta {} and "
          "full_attention {}; replica has one rope_theta", source, sliding_theta, c.rope_theta);
  } else {
    scaling = read_rope_block(rp, "rope_parameters", c.max_seq_len, c.rope_theta, source);
  }
  if (!scaling) return;
  check(!c.rope_scaling || *c.rope_scaling == *scaling,
        "{}: rope_scaling and rope_parameters give different YaRN settings", source);
  c.rope_scaling = scaling;
}

ModelConfig model_config_from_json(const json& j, const std::string& source) {
  check(j.is_object(), "{}: a model config must be a mapping of keys", source);
  for (auto& [key, value] : j.items())
    check(key.starts_with("_") || kModelKeys.count(key) != 0, "{}: unknown model config key '{}'", source, key);

  ModelConfig c;
  c.model_type = get<std::string>(j, "model_type", source, "olmo3");
  check(c.model_type == "olmo3" || c.model_type == "olmo2" || c.model_type == "llama",
        "{}: model_type '{}' is not supported (expected olmo3, olmo2 or llama)", source, c.model_type);
  bool olmo = c.model_type != "llama";
  const HfDefaults defaults = hf_defaults(c.model_type);
  c.vocab_size = required(j, "vocab_size", source);
  c.d_model = required(j, "hidden_size", source);
  c.ffn_hidden = required(j, "intermediate_size", source);
  c.n_layers = required(j, "num_hidden_layers", source);
  c.n_heads = required(j, "num_attention_heads", source);
  c.n_kv_heads = get<int64_t>(j, "num_key_value_heads", source, c.n_heads);
  c.head_dim = get<int64_t>(j, "head_dim", source, c.n_heads > 0 ? c.d_model / c.n_heads : 0);
  c.norm_eps = get<double>(j, "rms_norm_eps", source, defaults.rms_norm_eps);
  c.max_seq_len = get<int64_t>(j, "max_position_embeddings", source, defaults.max_position_embeddings);
  read_rope(j, c, defaults.rope_theta, source);
  c.sliding_window = get<int64_t>(j, "sliding_window", source, defaults.sliding_window);
  if (c.model_type != "olmo3") c.sliding_window = 0;  // not a key of Olmo2Config or LlamaConfig: transformers ignores it
  c.tie_embeddings = get<bool>(j, "tie_word_embeddings", source, false);
  c.qk_norm = get<bool>(j, "qk_norm", source, olmo);
  c.init_std = get<double>(j, "initializer_range", source, 0.02);
  c.eos_token_id = get<int64_t>(j, "eos_token_id", source, 100257);
  c.pad_token_id = get<int64_t>(j, "pad_token_id", source, 100277);
  std::string placement = get<std::string>(j, "norm_placement", source, olmo ? "reordered" : "pre");
  check(placement == "reordered" || placement == "pre",
        "{}: norm_placement must be 'reordered' (OLMo 2/3) or 'pre' (Llama), got '{}'", source, placement);
  c.norm_placement = placement == "reordered" ? NormPlacement::reordered : NormPlacement::pre;
  std::string act = get<std::string>(j, "hidden_act", source, "silu");
  check(act == "silu", "{}: hidden_act must be 'silu' (SwiGLU), got '{}'", source, act);
  check(!get<bool>(j, "attention_bias", source, false), "{}: attention_bias=true is not supported", source);

  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    for (const json& t : j["layer_types"]) {
      std::string type = t.is_string() ? t.get<std::string>() : t.dump();
      check(type == "sliding_attention" || type == "full_attention",
            "{}: layer_types entry '{}' (expected sliding_attention or full_attention)", source, type);
      c.sliding.push_back(type == "sliding_attention");
      // Olmo2Config and LlamaConfig have no sliding layers: their HF export could not say so, and transformers
      // would build full attention.
      check(c.model_type == "olmo3" || !c.sliding.back(), "{}: layer_types has sliding_attention layers, which only "
            "model_type olmo3 has", source);
    }
  } else {
    // HF Olmo3 default: three sliding layers then one full, so the last of every four is global.
    // OLMo 2 and Llama have full attention everywhere.
    for (int64_t i = 0; i < c.n_layers; i++) c.sliding.push_back(c.model_type == "olmo3" && (i + 1) % 4 != 0);
  }
  c.validate(source);
  return c;
}

static json yaml_to_json(const YAML::Node& node, const std::string& source) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json j = json::object();
      for (const auto& [key, value] : config::mapping_entries(node, "", source)) j[key] = yaml_to_json(value, source);
      return j;
    }
    case YAML::NodeType::Sequence: {
      json j = json::array();
      for (auto item : node) j.push_back(yaml_to_json(item, source));
      return j;
    }
    case YAML::NodeType::Scalar: {
      std::string s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return nullptr;
      if (const std::optional<int64_t> i = parse_int64(s)) return *i;
      if (const std::optional<double> d = parse_double(s)) return *d;
      return s;
    }
    default:
      return nullptr;
  }
}

ModelConfig load_model_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::string file = fs::is_directory(path) ? (fs::path(path) / "config.json").string() : path;
  check(fs::exists(file), "{}: model config not found", file);
  std::string ext = fs::path(file).extension().string();
  json j;
  if (ext == ".yaml" || ext == ".yml") {
    try {
      j = yaml_to_json(YAML::LoadFile(file), file);
    } catch (const YAML::Exception& e) {
      fail("{}: invalid YAML ({})", file, config::yaml_error_text(e));
    }
  } else {
    try {
      j = json::parse(read_text_file(file));
    } catch (const json::exception& e) {
      fail("{}: invalid JSON ({})", file, e.what());
    }
  }
  return model_config_from_json(j, file);
}

// rope_scaling as the released OLMo 3 config.json writes it (OLMo-core's YaRNRoPEScalingConfig.to_hf_config), or null.
static json rope_scaling_json(const ModelConfig& c) {
  if (!c.rope_scaling) return nullptr;
  const YarnScaling& y = *c.rope_scaling;
  return {{"rope_type", "yarn"},
          {"factor", y.factor},
          {"original_max_position_embeddings", y.original_max_position_embeddings},
          {"beta_fast", y.beta_fast},
          {"beta_slow", y.beta_slow},
          {"attention_factor", y.attention_factor}};
}

json model_config_to_hf_json(const ModelConfig& c) {
  json layer_types = json::array();
  for (bool s : c.sliding) layer_types.push_back(s ? "sliding_attention" : "full_attention");
  const char* arch = c.model_type == "olmo3" ? "Olmo3ForCausalLM"
                     : c.model_type == "olmo2" ? "Olmo2ForCausalLM" : "LlamaForCausalLM";
  json j = {{"architectures", {arch}},
            {"model_type", c.model_type},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.d_model},
            {"intermediate_size", c.ffn_hidden},
            {"num_hidden_layers", c.n_layers},
            {"num_attention_heads", c.n_heads},
            {"num_key_value_heads", c.n_kv_heads},
            {"head_dim", c.head_dim},
            {"hidden_act", "silu"},
            {"rms_norm_eps", c.norm_eps},
            {"rope_theta", c.rope_theta},
            {"rope_scaling", rope_scaling_json(c)},
            {"tie_word_embeddings", c.tie_embeddings},
            {"max_position_embeddings", c.max_seq_len},
            {"attention_bias", false},
            {"attention_dropout", 0.0},
            {"initializer_range", c.init_std},
            {"eos_token_id", c.eos_token_id},
            {"pad_token_id", c.pad_token_id}};
  // replica's variant knobs are written only where they differ from the model type's default.
  const bool olmo = c.model_type != "llama";
  if (c.qk_norm != olmo) j["qk_norm"] = c.qk_norm;
  if ((c.norm_placement == NormPlacement::reordered) != olmo)
    j["norm_placement"] = c.norm_placement == NormPlacement::reordered ? "reordered" : "pre";
  if (c.model_type == "olmo3") {
    j["sliding_window"] = c.sliding_window;
    j["layer_types"] = layer_types;
  }
  return j;
}

}  // namespace replica::model
