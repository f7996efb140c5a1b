// Hugging Face model directories: reader (with vocabulary padding) and exporter.
#include "replica/ckpt/hf.h"

#include <fmt/core.h>

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "replica/ckpt/model_tensors.h"
#include "replica/ckpt/safetensors.h"
#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::ckpt {

namespace fs = std::filesystem;

static bool is_vocab_tensor(const std::string& name) {
  return name == "model.embed_tokens.weight" || name == "lm_head.weight";
}

void load_hf_params(const std::string& dir, const model::ParamTable& table, float* params) {
  const ModelTensors tensors(dir, table);
  for (const model::ParamEntry& e : table.entries()) tensors.read(e, params + e.offset);
}

HfModel load_hf_model(const std::string& dir) {
  check(fs::is_directory(dir), "{}: not a model directory", dir);
  HfModel model;
  model.config = model::load_model_config((fs::path(dir) / "config.json").string());
  model::ParamTable table(model.config);
  model.params.assign(table.total(), 0.0f);
  load_hf_params(dir, table, model.params.data());
  return model;
}

// A fresh directory beside `target` for the export to be written in before it is renamed onto `target`: made by
// mkdtemp, so it never is (or removes) anything that already exists.
static fs::path fresh_partial_dir(const fs::path& target) {
  std::string name = target.string() + ".partial.XXXXXX";
  const bool made = ::mkdtemp(name.data()) != nullptr;
  const std::string why = made ? "" : std::strerror(errno);
  check(made, "{}: cannot create a directory beside it to write into ({})", target.string(), why);
  return name;
}

// An export killed before its rename leaves target.partial.XXXXXX behind (as large as the model). It is not removed
// here, as another export to the same target may be writing it, but each start says where it is and how large.
static void report_stale_partials(const fs::path& target) {
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".partial.";
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(parent, error)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix) || name.size() != prefix.size() + 6 || !e.is_directory(error)) continue;
    uint64_t bytes = 0;
    for (const fs::directory_entry& f : fs::recursive_directory_iterator(e.path(), error))
      if (f.is_regular_file(error)) bytes += f.file_size(error);
    const fs::path shown = target.has_parent_path() ? e.path() : e.path().filename();  // as --out was given
    fmt::print(stderr,
               "warning: {} ({:.1f} MB) is left from an export that was cut short; delete it unless an "
               "export to {} is running now\n",
               shown.string(), double(bytes) / 1e6, target.string());
  }
}

void export_hf(const model::ModelConfig& config, const model::ParamTable& table, const float* params,
               const std::string& out_arg, const HfExportOptions& options) {
  fs::path target = fs::path(out_arg).lexically_normal();  // "DIR/" is DIR
  if (!target.has_filename()) target = target.parent_path();
  const std::string out = target.string();
  const int64_t V = options.vocab > 0 ? options.vocab : config.vocab_size;
  check(V <= config.vocab_size, "export: vocab {} is larger than the model's vocabulary ({})", V, config.vocab_size);
  for (auto [id, key] :
       {std::pair{config.eos_token_id, "eos_token_id"}, std::pair{config.pad_token_id, "pad_token_id"}})
    check(!(id < config.vocab_size && id >= V),
          "export: vocab {} drops the model's {} ({}), which config.json would then name outside the vocabulary; "
          "keep at least {} rows",
          V, key, id, id + 1);
  check(!fs::exists(out) || (fs::is_directory(out) && fs::is_empty(out)),
        "{}: exists and is not an empty directory (nothing was written; choose a new output directory)", out);
  model::ModelConfig exported = config;
  exported.vocab_size = V;
  nlohmann::json hf_config = model::model_config_to_hf_json(exported);
  hf_config["torch_dtype"] = options.dtype == StDtype::F32 ? "float32" : "bfloat16";
  // What transformers' GenerationConfig.from_model_config keeps of this config (keys sorted, as it writes them).
  const nlohmann::json generation_config = {
      {"_from_model_config", true}, {"eos_token_id", config.eos_token_id}, {"pad_token_id", config.pad_token_id}};
  for (const auto& [name, content] : options.extra_files)
    check(name.find('/') == std::string::npos && !name.ends_with(".safetensors") && !name.ends_with(".index.json") &&
              name != "config.json" && name != "generation_config.json",
          "export: extra file '{}' would replace one the export writes", name);

  // Shards: tensors in table order, a new shard when the next tensor would pass the limit.
  const size_t width = options.dtype == StDtype::F32 ? 4 : 2;
  std::vector<std::vector<StTensorOut>> shards(1);
  uint64_t shard_bytes = 0, total_bytes = 0;
  for (const model::ParamEntry& e : table.entries()) {
    StTensorOut t{e.name, e.shape, params + e.offset, options.dtype};
    if (is_vocab_tensor(e.name)) t.shape[0] = V;
    const uint64_t bytes = uint64_t(t.shape[0]) * (e.numel / uint64_t(e.shape[0])) * width;
    if (!shards.back().empty() && shard_bytes + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(t);
    shard_bytes += bytes;
    total_bytes += bytes;
  }

  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  report_stale_partials(target);
  const fs::path partial = fresh_partial_dir(target);
  fs::permissions(partial, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  try {
    write_text_file_atomic((partial / "config.json").string(), hf_config.dump(2) + "\n");
    write_text_file_atomic((partial / "generation_config.json").string(), generation_config.dump(2) + "\n");
    for (const auto& [name, content] : options.extra_files) write_text_file_atomic((partial / name).string(), content);
    const std::map<std::string, std::string> metadata = {{"format", "pt"}};
    if (shards.size() == 1) {
      write_safetensors((partial / "model.safetensors").string(), shards[0], metadata);
    } else {
      nlohmann::json weight_map = nlohmann::json::object();
      for (size_t k = 0; k < shards.size(); k++) {
        const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, shards.size());
        write_safetensors((partial / file).string(), shards[k], metadata);
        for (const StTensorOut& t : shards[k]) weight_map[t.name] = file;
      }
      const nlohmann::json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
      write_text_file_atomic((partial / "model.safetensors.index.json").string(), index.dump(2) + "\n");
    }
    fsync_directory(partial.string());
  } catch (...) {
    fs::remove_all(partial);  // ours alone (fresh_partial_dir): a failed export leaves nothing behind
    throw;
  }
  if (fs::exists(out)) fs::remove(out);  // an empty directory
  fs::rename(partial, out);
  const fs::path parent = fs::absolute(out).parent_path();
  fsync_directory(parent.string());
}

}  // namespace replica::ckpt
