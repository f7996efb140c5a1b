// A model's tensors, opened once and read one at a time (HF directories and replica checkpoints).
#include "replica/ckpt/model_tensors.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "replica/ckpt/checkpoint.h"
#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::ckpt {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kVocabPadding = 128;

bool is_vocab_tensor(const std::string& name) {
  return name == "model.embed_tokens.weight" || name == "lm_head.weight";
}

// The vocabulary tensor's rows on disk when it is truncated (100278 tokens of a 100352-row embedding, padded back with
// zero rows up to the next multiple of 128 as OLMo-core pads it); 0 when it has the table's shape.
int64_t truncated_rows(const std::string& dir, const model::ParamEntry& e, const std::vector<int64_t>& shape) {
  if (!is_vocab_tensor(e.name) || shape.size() != 2 || shape[1] != e.shape[1] || shape[0] >= e.shape[0]) return 0;
  check(e.shape[0] <= (shape[0] + kVocabPadding - 1) / kVocabPadding * kVocabPadding,
        "{}: tensor '{}' has {} rows, the model {}: more than padding to a multiple of {} explains", dir, e.name,
        shape[0], e.shape[0], kVocabPadding);
  return shape[0];
}

// Which file of an HF directory holds each tensor: the index's weight map, or model.safetensors alone.
std::map<std::string, std::string> hf_files(const std::string& dir) {
  std::map<std::string, std::string> file_of;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single = fs::path(dir) / "model.safetensors";
  if (!fs::exists(index)) {
    check(fs::exists(single), "{}: no model.safetensors or model.safetensors.index.json", dir);
    return {};  // every tensor of the single file
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(read_text_file(index.string()));
    for (auto& [name, file] : j.at("weight_map").items()) {
      const std::string shard = file.get<std::string>();
      // The index names shards of its own directory, as a manifest names its files: a path (`../`, absolute)
      // would load weights from anywhere.
      check(!shard.empty() && shard != "." && shard != ".." && shard.find('/') == std::string::npos,
            "{}: tensor '{}' is mapped to '{}', which is not a file name in the model directory", index.string(), name,
            shard);
      file_of[name] = (fs::path(dir) / shard);
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid index ({})", index.string(), e.what());
  }
  return file_of;
}

}  // namespace

ModelTensors::ModelTensors(const std::string& dir, const model::ParamTable& table) : dir_(dir), table_(table) {
  if (is_checkpoint_dir(dir)) {
    std::unique_ptr<SafetensorsReader> reader = open_checkpoint_weights(dir, table);
    for (const model::ParamEntry& e : table.entries()) reader_of_[e.name] = reader.get();
    readers_[reader->path()] = std::move(reader);
    return;
  }
  std::map<std::string, std::string> file_of = hf_files(dir);
  if (file_of.empty()) {
    const std::string single = (fs::path(dir) / "model.safetensors").string();
    auto reader = std::make_unique<SafetensorsReader>(single);
    for (auto& [name, info] : reader->tensors()) file_of[name] = single;
    readers_[single] = std::move(reader);
  }
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  for (auto& [name, file] : file_of)
    if (!readers_.count(file)) {
      std::error_code error;  // a name the file system refuses (too long, say) is the index's fault, named so
      const bool exists = fs::exists(file, error);
      check(!error, "{}: shard '{}' named by the index cannot be looked up ({})", index.string(), file,
            error.message());
      check(exists, "{}: shard '{}' named by the index does not exist", index.string(), file);
      readers_[file] = std::make_unique<SafetensorsReader>(file);
    }
  for (const model::ParamEntry& e : table.entries()) {
    auto it = file_of.find(e.name);
    check(it != file_of.end(), "{}: missing tensor '{}' (expected shape {})", dir, e.name, shape_string(e.shape));
    const SafetensorsReader& reader = *readers_.at(it->second);
    const std::vector<int64_t>& shape = reader.info(e.name).shape;
    check(truncated_rows(dir, e, shape) > 0 || shape == e.shape, "{}: tensor '{}' has shape {}, expected {}",
          reader.path(), e.name, shape_string(shape), shape_string(e.shape));
    reader_of_[e.name] = &reader;
  }
  for (auto& [name, file] : file_of) {
    // Rotary frequency buffers are derived from the config, not parameters.
    if (name.size() >= 20 && name.ends_with("rotary_emb.inv_freq")) continue;
    check(table.has(name), "{}: unexpected tensor '{}' that the model config does not define", file, name);
  }
}

void ModelTensors::read(const model::ParamEntry& e, float* dst) const {
  const SafetensorsReader& reader = *reader_of_.at(e.name);
  const std::vector<int64_t>& shape = reader.info(e.name).shape;
  if (const int64_t rows = truncated_rows(dir_, e, shape); rows > 0) {
    reader.read_f32(e.name, shape, dst);
    std::fill(dst + rows * shape[1], dst + e.numel, 0.0f);
  } else {
    reader.read_f32(e.name, e.shape, dst);
  }
}

void ModelTensors::read_range(model::ParamTable::Range range, float* dst) const {
  std::fill(dst, dst + (range.end - range.begin), 0.0f);
  for (const model::ParamEntry& e : table_.entries())
    if (e.offset >= range.begin && e.offset < range.end) read(e, dst + (e.offset - range.begin));
}

}  // namespace replica::ckpt
