// Hugging Face model directory reader.
#include "replica/ckpt/hf.h"

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "replica/ckpt/safetensors.h"
#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica {

namespace fs = std::filesystem;

void load_hf_params(const std::string& dir, const ParamTable& table, float* params) {
  // Which file holds each tensor.
  std::map<std::string, std::string> file_of;
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  fs::path single = fs::path(dir) / "model.safetensors";
  std::map<std::string, std::unique_ptr<SafetensorsReader>> readers;
  if (fs::exists(index)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text_file(index.string()));
      for (auto& [name, file] : j.at("weight_map").items()) file_of[name] = (fs::path(dir) / file.get<std::string>());
    } catch (const nlohmann::json::exception& e) {
      fail("{}: invalid index ({})", index.string(), e.what());
    }
    for (auto& [name, file] : file_of)
      if (!readers.count(file)) {
        check(fs::exists(file), "{}: shard '{}' named by the index does not exist", index.string(), file);
        readers[file] = std::make_unique<SafetensorsReader>(file);
      }
  } else {
    check(fs::exists(single), "{}: no model.safetensors or model.safetensors.index.json", dir);
    auto reader = std::make_unique<SafetensorsReader>(single.string());
    for (auto& [name, info] : reader->tensors()) file_of[name] = single.string();
    readers[single.string()] = std::move(reader);
  }

  for (const ParamEntry& e : table.entries()) {
    auto it = file_of.find(e.name);
    check(it != file_of.end(), "{}: missing tensor '{}' (expected shape {})", dir, e.name, shape_string(e.shape));
    readers.at(it->second)->read_f32(e.name, e.shape, params + e.offset);
  }
  for (auto& [name, file] : file_of) {
    // Rotary frequency buffers are derived from the config, not parameters.
    if (name.size() >= 20 && name.ends_with("rotary_emb.inv_freq")) continue;
    check(table.has(name), "{}: unexpected tensor '{}' that the model config does not define", file, name);
  }
}

HfModel load_hf_model(const std::string& dir) {
  check(fs::is_directory(dir), "{}: not a model directory", dir);
  HfModel model;
  model.config = load_model_config((fs::path(dir) / "config.json").string());
  ParamTable table(model.config);
  model.params.assign(table.total(), 0.0f);
  load_hf_params(dir, table, model.params.data());
  return model;
}

}  // namespace replica
