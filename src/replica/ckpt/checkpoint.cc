// Checkpoint directories: atomic writes, retention, discovery and verified reads.
#include "replica/ckpt/checkpoint.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "replica/ckpt/manifest.h"
#include "replica/ckpt/safetensors.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/json_integer.h"
#include "replica/core/parse_number.h"

namespace replica::ckpt {

namespace fs = std::filesystem;
using nlohmann::json;

json train_state_to_json(const TrainState& s) {
  return {{"version", kCheckpointVersion},
          {"step", s.step},
          {"tokens", s.tokens},
          {"data",
           {{"epoch", s.epoch},
            {"batch", s.batch},
            {"batches_consumed", s.batches_consumed},
            {"global_batch_size", s.global_batch_size},
            {"seq_len", s.seq_len},
            {"fingerprint", s.data_fingerprint}}},
          {"optimizer",
           {{"adam_step_count", s.optimizer_step_count}, {"schedule", s.schedule}, {"skip_step", s.skip_step}}},
          {"observers", s.observers},
          {"world_size", s.world_size},
          {"model", model::model_config_to_hf_json(s.model)},
          {"config", s.recipe}};
}

TrainState train_state_from_json(const json& j, const std::string& source) {
  TrainState s;
  try {
    const int64_t version = json_integer(j, "version", source);
    check(version <= kCheckpointVersion, "{}: checkpoint version {} is newer than this replica reads ({})", source,
          version, kCheckpointVersion);
    s.step = json_integer(j, "step", source, 0);
    s.tokens = json_integer(j, "tokens", source, 0);
    const json& d = j.at("data");
    s.epoch = uint64_t(json_integer(d, "epoch", source + ": data", 0));
    s.batch = json_integer(d, "batch", source + ": data", 0);
    s.batches_consumed = json_integer(d, "batches_consumed", source + ": data", 0);
    s.global_batch_size = json_integer(d, "global_batch_size", source + ": data", 1);
    s.seq_len = json_integer(d, "seq_len", source + ": data", 1);
    s.data_fingerprint = d.at("fingerprint").get<std::string>();
    const json& o = j.at("optimizer");
    s.optimizer_step_count = json_integer(o, "adam_step_count", source + ": optimizer", 0);
    s.schedule = o.at("schedule");
    s.skip_step = o.at("skip_step");
    // A checkpoint written before observers kept state has none: they start empty, as they did then.
    s.observers = j.value("observers", json::object());
    check(s.observers.is_object(), "{}: \"observers\" must be an object, got {}", source, s.observers.dump());
    s.world_size = json_integer(j, "world_size", source, 1);
    s.recipe = j.at("config").get<std::string>();
    s.model = model::model_config_from_json(j.at("model"), source);
  } catch (const json::exception& e) {
    fail("{}: malformed train state ({})", source, e.what());
  }
  return s;
}

OptimizerState::OptimizerState(std::vector<std::string> state_names, size_t floats)
    : names(std::move(state_names)), tensors(names.size(), std::vector<float>(floats)) {}

std::string checkpoint_dir_name(int64_t step) { return fmt::format("step{:08d}", step); }

namespace {

// The step of a complete checkpoint directory name ("step00001000"), or -1.
int64_t step_of(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.size() <= 4 || !name.starts_with("step")) return -1;
  if (!std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return parse_int64(std::string_view(name).substr(4)).value_or(-1);  // more digits than 2^63: not a step
}

bool is_complete(const fs::path& dir) { return fs::exists(dir / "MANIFEST.json"); }

// A directory of this run itself, not a symbolic link: a link in checkpoints/ points at a checkpoint someone else
// owns (another run's, linked in as a shortcut), which this run must never count, rotate or delete through.
bool is_own_directory(const fs::directory_entry& e) {
  std::error_code error;
  return e.symlink_status(error).type() == fs::file_type::directory;
}

bool is_link(const fs::path& path) {
  std::error_code error;
  return fs::is_symlink(fs::symlink_status(path, error));
}

// Complete checkpoints under root as (step, path), highest step first; linked step directories are not this run's.
std::vector<std::pair<int64_t, fs::path>> complete_checkpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  if (!fs::is_directory(root)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(root))
    if (is_own_directory(e) && step_of(e.path()) >= 0 && is_complete(e.path()))
      out.emplace_back(step_of(e.path()), e.path());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

// The manifest goes first: a deletion cut short leaves an incomplete directory, never a wrong checkpoint. A link is
// removed as a link, never through it.
void delete_checkpoint(const fs::path& dir) {
  if (is_link(dir)) {
    fs::remove(dir);
    return;
  }
  fs::remove(dir / "MANIFEST.json");
  fsync_directory(dir.string());
  fs::remove_all(dir);
}

std::vector<StTensorOut> tensors_of(const model::ParamTable& table, const float* base, const std::string& prefix) {
  std::vector<StTensorOut> out;
  for (const model::ParamEntry& e : table.entries())
    out.push_back({prefix + e.name, e.shape, base + e.offset, StDtype::F32});
  return out;
}

}  // namespace

std::string write_checkpoint(const std::string& root, const CheckpointTensors& t, const TrainState& state,
                             int64_t keep) {
  const std::string name = checkpoint_dir_name(state.step);
  const fs::path final_dir = fs::path(root) / name, partial = fs::path(root) / (name + ".partial");
  fs::create_directories(root);
  fs::remove_all(partial);
  fs::create_directories(partial);
  std::vector<std::string> files = {"model.safetensors", "train_state.json"};
  // Each tensor file names its step, so weights copied in from another step (with their manifest line) are refused.
  const std::string step = std::to_string(state.step);
  write_safetensors((partial / "model.safetensors").string(), tensors_of(*t.table, t.params, ""),
                    {{"format", "pt"}, {"step", step}});
  if (const OptimizerState* o = t.optimizer) {
    check(o->names.size() == o->tensors.size(), "write_checkpoint: {} optimizer state names for {} tensors",
          o->names.size(), o->tensors.size());
    std::vector<StTensorOut> state;
    for (size_t i = 0; i < o->names.size(); i++) {
      check(o->tensors[i].size() == t.table->total(), "write_checkpoint: optimizer state '{}' holds {} floats, not {}",
            o->names[i], o->tensors[i].size(), t.table->total());
      for (StTensorOut& tensor : tensors_of(*t.table, o->tensors[i].data(), o->names[i] + ".")) state.push_back(tensor);
    }
    write_safetensors((partial / "optim.safetensors").string(), state, {{"step", step}});
    files.push_back("optim.safetensors");
  }
  write_text_file_atomic((partial / "train_state.json").string(), train_state_to_json(state).dump(2) + "\n");
  write_manifest(partial.string(), files);
  fsync_directory(partial.string());
  if (fs::exists(final_dir)) delete_checkpoint(final_dir);  // same step from an abandoned timeline
  fs::rename(partial, final_dir);
  fsync_directory(root);
  write_text_file_atomic((fs::path(root) / "latest").string(), name + "\n");

  if (keep > 0) {
    int64_t kept = 1;  // the one just written
    for (const auto& [step, dir] : complete_checkpoints(root)) {
      if (step >= state.step) continue;  // newer ones belong to another timeline: never touched
      if (kept++ >= keep) delete_checkpoint(dir);
    }
  }
  return final_dir.string();
}

std::string find_latest_checkpoint(const std::string& root) {
  const fs::path latest = fs::path(root) / "latest";
  if (fs::exists(latest)) {
    std::string name = read_text_file(latest.string());
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    // replica writes a bare step name there; a path is someone else's doing, and following it would resume
    // another run's checkpoint as if it were this one's.
    check(name.find('/') == std::string::npos && name != "..",
          "{}: names '{}', which is not a checkpoint directory of this run (replica writes a name like step00000004 "
          "there); to start from another run's checkpoint, set train.resume_from or model.init_from",
          latest.string(), name);
    const fs::path dir = fs::path(root) / name;
    if (!name.empty() && step_of(dir) >= 0 && !is_link(dir) && is_complete(dir)) return dir.string();
  }
  const auto all = complete_checkpoints(root);
  return all.empty() ? "" : all.front().second.string();
}

IncompleteCheckpoints set_aside_incomplete_checkpoints(const std::string& root, const std::string& keep) {
  IncompleteCheckpoints said;
  if (!fs::is_directory(root)) return said;
  std::vector<fs::path> partial, incomplete;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (step_of(e.path()) >= 0 && is_link(e.path())) {
      said.linked.push_back(fmt::format(
          "ignored {}: a symbolic link (to {}), not a checkpoint of this run; replica never resumes from, rotates or "
          "deletes through a link (to start from that checkpoint, set train.resume_from or model.init_from)",
          e.path().string(), fs::read_symlink(e.path()).string()));
      continue;
    }
    if (!is_own_directory(e)) continue;
    if (e.path().filename().string().ends_with(".partial")) partial.push_back(e.path());
    std::error_code same;
    if (step_of(e.path()) >= 0 && !is_complete(e.path()) && !(!keep.empty() && fs::equivalent(e.path(), keep, same)))
      incomplete.push_back(e.path());
  }
  std::sort(partial.begin(), partial.end());
  std::sort(incomplete.begin(), incomplete.end());
  for (const fs::path& p : partial) {
    fs::remove_all(p);
    said.removed.push_back(fmt::format("removed {} (a save cut short)", p.string()));
  }
  for (const fs::path& p : incomplete) {
    fs::path aside = p.string() + ".incomplete";
    for (int n = 2; fs::exists(aside); n++) aside = fmt::format("{}.incomplete.{}", p.string(), n);
    fs::rename(p, aside);
    said.set_aside.push_back(fmt::format("set aside {} as {}: it has no MANIFEST.json (a save or deletion cut short); "
                               "delete it when you no longer need it",
                               p.string(), aside.filename().string()));
  }
  return said;
}

bool is_checkpoint_dir(const std::string& path) {
  return fs::is_directory(path) && fs::exists(fs::path(path) / "train_state.json");
}

static TrainState parse_state_file(const std::string& dir) {
  const std::string path = (fs::path(dir) / "train_state.json").string();
  check(fs::exists(path), "{}: not a replica checkpoint (no train_state.json)", dir);
  try {
    return train_state_from_json(json::parse(read_text_file(path)), path);
  } catch (const json::exception& e) {
    fail("{}: malformed JSON ({})", path, e.what());
  }
}

TrainState read_checkpoint_state(const std::string& dir, CheckpointRead what) {
  check(fs::is_directory(dir), "{}: checkpoint directory not found", dir);
  std::vector<std::string> required = {"model.safetensors", "train_state.json"};
  if (what == CheckpointRead::weights_and_optimizer) required.push_back("optim.safetensors");
  verify_manifest(dir, required);
  return parse_state_file(dir);
}

model::ModelConfig read_checkpoint_model_config(const std::string& dir) { return parse_state_file(dir).model; }

std::string read_checkpoint_recipe(const std::string& dir) { return parse_state_file(dir).recipe; }

static void read_tensors(const SafetensorsReader& reader, const model::ParamTable& table, const std::string& prefix,
                         float* dst) {
  for (const model::ParamEntry& e : table.entries()) {
    const StTensorInfo& info = reader.info(prefix + e.name);
    check(info.dtype == StDtype::F32, "{}: tensor '{}' is not F32 (a checkpoint stores fp32 tensors)", reader.path(),
          prefix + e.name);
    reader.read_f32(prefix + e.name, e.shape, dst + e.offset);
  }
}

static void check_count(const SafetensorsReader& reader, size_t expected) {
  check(reader.tensors().size() == expected, "{}: holds {} tensors, expected {}", reader.path(),
        reader.tensors().size(), expected);
}

// A tensor file written with its step (every checkpoint since they record it) must be of the step train_state.json
// says: the manifest alone cannot tell, since a file copied from another step can bring its manifest line along.
static void check_step(const SafetensorsReader& reader, int64_t step) {
  const auto it = reader.metadata.find("step");
  if (it == reader.metadata.end()) return;  // written before checkpoints named their step
  check(it->second == std::to_string(step),
        "{}: holds the tensors of step {}, but train_state.json beside it is step {} (a file copied in from "
        "another checkpoint?)",
        reader.path(), it->second, step);
}

// The state names of an optim.safetensors: its tensors' names up to the first '.' (a state name has none).
static std::vector<std::string> state_names_of(const SafetensorsReader& reader) {
  std::vector<std::string> names;
  for (const auto& [name, info] : reader.tensors()) {
    const std::string state = name.substr(0, name.find('.'));
    if (std::find(names.begin(), names.end(), state) == names.end()) names.push_back(state);
  }
  return names;
}

static std::string listed(const std::vector<std::string>& names) {
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

void read_checkpoint_tensors(const std::string& dir, const model::ParamTable& table, float* params,
                             OptimizerState* optimizer) {
  const int64_t step = parse_state_file(dir).step;
  const SafetensorsReader model((fs::path(dir) / "model.safetensors").string());
  check_step(model, step);
  read_tensors(model, table, "", params);
  check_count(model, table.entries().size());
  if (!optimizer) return;
  const std::string optim = (fs::path(dir) / "optim.safetensors").string();
  check(fs::exists(optim), "{}: missing (the checkpoint holds no optimizer state)", optim);
  SafetensorsReader reader(optim);
  check_step(reader, step);
  std::vector<std::string> saved = state_names_of(reader), wanted = optimizer->names;
  std::sort(saved.begin(), saved.end());
  std::sort(wanted.begin(), wanted.end());
  check(saved == wanted,
        "{}: holds the optimizer state {}, but the optimizer (optim.name) keeps {}: a checkpoint resumes only with "
        "the optimizer it was saved with",
        optim, listed(saved), listed(optimizer->names));
  optimizer->tensors.resize(optimizer->names.size());
  for (size_t i = 0; i < optimizer->names.size(); i++) {
    optimizer->tensors[i].resize(table.total());
    read_tensors(reader, table, optimizer->names[i] + ".", optimizer->tensors[i].data());
  }
  check_count(reader, optimizer->names.size() * table.entries().size());
}

std::unique_ptr<SafetensorsReader> open_checkpoint_weights(const std::string& dir, const model::ParamTable& table) {
  const int64_t step = read_checkpoint_state(dir, CheckpointRead::weights).step;
  auto reader = std::make_unique<SafetensorsReader>((fs::path(dir) / "model.safetensors").string());
  check_step(*reader, step);
  for (const model::ParamEntry& e : table.entries()) {
    const StTensorInfo& info = reader->info(e.name);
    check(info.dtype == StDtype::F32, "{}: tensor '{}' is not F32 (a checkpoint stores fp32 tensors)", reader->path(),
          e.name);
    check(info.shape == e.shape, "{}: tensor '{}' has shape {}, expected {}", reader->path(), e.name,
          shape_string(info.shape), shape_string(e.shape));
  }
  check_count(*reader, table.entries().size());
  return reader;
}

void check_same_model(const model::ModelConfig& saved, const model::ModelConfig& expected, const std::string& dir) {
  const json a = model::model_config_to_hf_json(saved), b = model::model_config_to_hf_json(expected);
  std::string diff;
  for (auto& [key, value] : b.items())
    if (!a.contains(key) || a[key] != value)
      diff += fmt::format(" {}: checkpoint {}, expected {};", key, a.contains(key) ? a[key].dump() : "-", value.dump());
  check(diff.empty(), "{}: the checkpoint holds a different model:{}", dir, diff);
}

}  // namespace replica::ckpt
