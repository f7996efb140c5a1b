// OLMo-core checkpoints: parameter names (OLMo-core's olmo_core/nn/hf/convert.py, the mapping it exports HF
// models with) and the train module's flattened state dict.
#include "replica/ckpt/olmo_core_checkpoint.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "replica/ckpt/dcp.h"
#include "replica/core/error.h"

namespace replica::ckpt {

namespace fs = std::filesystem;

static std::string dcp_dir(const std::string& path) {
  const fs::path nested = fs::path(path) / "model_and_optim";
  return fs::is_regular_file(nested / ".metadata") ? nested.string() : path;
}

bool is_olmo_core_checkpoint(const std::string& path) {
  return fs::is_regular_file(fs::path(dcp_dir(path)) / ".metadata");
}

std::string olmo_core_name(const std::string& hf_name, const model::ModelConfig& config) {
  static const std::map<std::string, std::string> top = {{"model.embed_tokens.weight", "embeddings.weight"},
                                                         {"model.norm.weight", "lm_head.norm.weight"},
                                                         {"lm_head.weight", "lm_head.w_out.weight"}};
  if (auto it = top.find(hf_name); it != top.end()) return it->second;
  const bool reordered = config.norm_placement == model::NormPlacement::reordered;
  const std::map<std::string, std::string> in_block = {
      {"self_attn.q_proj.weight", "attention.w_q.weight"},
      {"self_attn.k_proj.weight", "attention.w_k.weight"},
      {"self_attn.v_proj.weight", "attention.w_v.weight"},
      {"self_attn.o_proj.weight", "attention.w_out.weight"},
      {"self_attn.q_norm.weight", "attention.q_norm.weight"},
      {"self_attn.k_norm.weight", "attention.k_norm.weight"},
      {"mlp.gate_proj.weight", "feed_forward.w1.weight"},
      {"mlp.down_proj.weight", "feed_forward.w2.weight"},
      {"mlp.up_proj.weight", "feed_forward.w3.weight"},
      {"input_layernorm.weight", "attention_norm.weight"},
      {"post_attention_layernorm.weight", reordered ? "attention_norm.weight" : "feed_forward_norm.weight"},
      {"post_feedforward_layernorm.weight", "feed_forward_norm.weight"},
  };
  const std::string layers = "model.layers.";
  if (hf_name.starts_with(layers)) {
    const size_t dot = hf_name.find('.', layers.size());
    if (dot != std::string::npos)
      if (auto it = in_block.find(hf_name.substr(dot + 1)); it != in_block.end())
        return fmt::format("blocks.{}.{}", hf_name.substr(layers.size(), dot - layers.size()), it->second);
  }
  fail("parameter '{}' has no OLMo-core name", hf_name);
}

// Adam's step of one parameter: a 0-dim float32 tensor holding a whole number.
static int64_t read_step(const DcpCheckpoint& dcp, const std::string& key) {
  float step = 0;
  dcp.read_f32(key, {}, &step);
  check(std::isfinite(step) && step >= 0 && step == std::floor(step), "{}: '{}' is {}, not a count of steps", dcp.dir(),
        key, step);
  return int64_t(step);
}

int64_t read_olmo_core_checkpoint(const std::string& path, const model::ModelConfig& config,
                                  const model::ParamTable& table, float* params, OptimizerState* optimizer) {
  const DcpCheckpoint dcp(dcp_dir(path));
  std::set<std::string> expected;
  for (const model::ParamEntry& e : table.entries()) expected.insert("model." + olmo_core_name(e.name, config));
  bool any_model = false;
  for (const auto& [key, tensor] : dcp.tensors())
    if (key.starts_with("model.")) {
      any_model = true;
      check(expected.count(key), "{}: unexpected tensor '{}' that the model config does not define", dcp.dir(), key);
    }
  check(any_model, "{}: no model.* tensors: not the model_and_optim directory of an OLMo-core checkpoint", dcp.dir());

  if (optimizer) optimizer->tensors.assign(optimizer->names.size(), std::vector<float>(table.total()));
  std::optional<std::pair<std::string, int64_t>> first_step;  // the key and value every other step must equal
  for (const model::ParamEntry& e : table.entries()) {
    const std::string name = olmo_core_name(e.name, config);
    dcp.read_f32("model." + name, e.shape, params + e.offset);
    if (!optimizer) continue;
    const std::string state = "optim.state." + name + ".";
    for (size_t i = 0; i < optimizer->names.size(); i++)
      dcp.read_f32(state + optimizer->names[i], e.shape, optimizer->tensors[i].data() + e.offset);
    const int64_t step = read_step(dcp, state + "step");
    if (!first_step) first_step = {state + "step", step};
    check(step == first_step->second,
          "{}: '{}' is {} but '{}' is {}: replica keeps one step count for all "
          "parameters",
          dcp.dir(), state + "step", step, first_step->first, first_step->second);
  }
  return first_step ? first_step->second : 0;
}

}  // namespace replica::ckpt
