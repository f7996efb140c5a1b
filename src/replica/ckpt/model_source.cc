// Models from HF directories or replica checkpoints.
#include "replica/ckpt/model_source.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "replica/ckpt/checkpoint.h"
#include "replica/ckpt/olmo_core_checkpoint.h"
#include "replica/core/error.h"

namespace replica::ckpt {

std::string resolve_model_source(const std::string& path) {
  namespace fs = std::filesystem;
  // RUN/checkpoints itself (a directory of step directories, no config.json): its latest complete checkpoint.
  if (fs::is_directory(path) && !is_checkpoint_dir(path) && !fs::exists(fs::path(path) / "config.json")) {
    const std::string latest = find_latest_checkpoint(path);
    if (!latest.empty()) return latest;
  }
  const std::string checkpoints = (std::filesystem::path(path) / "checkpoints").string();
  if (is_checkpoint_dir(path) || !std::filesystem::is_directory(checkpoints)) return path;
  const std::string latest = find_latest_checkpoint(checkpoints);
  check(!latest.empty(), "{}: a run directory without a complete checkpoint in checkpoints/", path);
  return latest;
}

model::ModelConfig load_model_source_config(const std::string& path) {
  namespace fs = std::filesystem;
  check(fs::exists(path), "{}: no such model (expected an HF model directory, a replica checkpoint or a run directory)",
        path);
  check(!is_olmo_core_checkpoint(path),
        "{}: an OLMo-core checkpoint holds no HF model config: give the model with model.config (AI2's OLMo 3 7B: "
        "configs/models/olmo3_7b.yaml)",
        path);
  if (is_checkpoint_dir(path)) return read_checkpoint_model_config(path);
  check(!fs::is_directory(path) || fs::exists(fs::path(path) / "config.json"),
        "{}: not a model directory: no config.json (an HF model), train_state.json (a replica checkpoint) or "
        "checkpoints/ (a run)",
        path);
  return model::load_model_config(path);
}

void load_model_source_params(const std::string& path, const model::ModelConfig& config, const model::ParamTable& table,
                              float* params) {
  check(std::filesystem::is_directory(path), "{}: not a model directory (an HF model or a replica checkpoint)", path);
  if (is_olmo_core_checkpoint(path)) {
    read_olmo_core_checkpoint(path, config, table, params);
    return;
  }
  if (!is_checkpoint_dir(path)) return load_hf_params(path, table, params);
  read_checkpoint_state(path, CheckpointRead::weights);  // verifies the checksums
  read_checkpoint_tensors(path, table, params);
}

AttentionKernel recorded_attention(const std::string& path, Device device) {
  if (!is_checkpoint_dir(path)) return AttentionKernel::automatic;
  const std::string where = (std::filesystem::path(path) / "train_state.json").string();
  YAML::Node recipe;
  try {
    recipe = YAML::Load(read_checkpoint_recipe(path));
  } catch (const YAML::Exception& e) {
    fail("{}: the saved recipe is not valid YAML ({})", where, e.what());
  }
  const YAML::Node train = recipe.IsMap() ? recipe["train"] : YAML::Node();
  const YAML::Node scalar = train.IsMap() ? train["attention"] : YAML::Node();
  if (!scalar.IsScalar()) return AttentionKernel::automatic;  // a recipe from before train.attention
  AttentionKernel kernel;
  try {
    kernel = parse_attention_kernel(scalar.Scalar());
  } catch (const Error& e) {
    fail("{}: train.attention of the saved recipe: {}", where, e.what());
  }
  // A kernel of the other device (a GPU run's mma evaluated on the CPU) gives way to this device's default.
  const bool here = device == Device::cpu ? kernel == AttentionKernel::fp32 || kernel == AttentionKernel::cpu_bf16
                                          : kernel != AttentionKernel::cpu_bf16;
  return here ? kernel : AttentionKernel::automatic;
}

HfModel load_model_source(const std::string& source) {
  const std::string path = resolve_model_source(source);
  HfModel model;
  check(std::filesystem::is_directory(path), "{}: not a model directory (an HF model or a replica checkpoint)", path);
  model.config = load_model_source_config(path);
  model::ParamTable table(model.config);
  model.params.assign(table.total(), 0.0f);
  load_model_source_params(path, model.config, table, model.params.data());
  return model;
}

}  // namespace replica::ckpt
