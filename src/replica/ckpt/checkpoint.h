// Checkpoint directories (DESIGN.md §4): run/checkpoints/step00001000/ holding model.safetensors (fp32
// master weights), optim.safetensors (the optimizer's state tensors by name: <state>.<parameter>, e.g. AdamW's
// exp_avg.<parameter> and exp_avg_sq.<parameter>; ckpt::OptimizerState), train_state.json and
// MANIFEST.json, written last. A save goes to step00001000.partial/, every file fsynced, then the
// directory is renamed and checkpoints/latest (a one-line text file naming it) replaced atomically.
// Tensors are whole (logical shapes), so any world size can load any checkpoint.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "replica/ckpt/safetensors.h"
#include "replica/model/config.h"
#include "replica/model/params.h"

namespace replica::ckpt {

inline constexpr int64_t kCheckpointVersion = 1;

// train_state.json: everything besides the tensors that an exact resume needs.
struct TrainState {
  int64_t step = 0;     // optimizer steps completed (skipped ones included)
  int64_t tokens = 0;   // tokens consumed
  uint64_t epoch = 1;   // data position of the next step: epoch (1-based) ...
  int64_t batch = 0;    // ... and global batch within it
  int64_t batches_consumed = 0;
  int64_t global_batch_size = 0, seq_len = 0;
  std::string data_fingerprint;
  // The optimizer's updates applied (skipped steps not counted; optim::Optimizer::step_count). Stored as
  // "adam_step_count", its name from when AdamW was the one optimizer, so AdamW's checkpoints keep their bytes.
  int64_t optimizer_step_count = 0;
  nlohmann::json schedule;   // the resolved LR schedule (recorded; the LR is a function of the step)
  nlohmann::json skip_step;  // SkipStep::to_json()
  // What the run's observers keep across steps, by name (train/observer.h Observer::state_name); {} when none.
  nlohmann::json observers = nlohmann::json::object();
  int64_t world_size = 1;    // at save
  std::string recipe;        // resolved recipe YAML ("config" in train_state.json)
  model::ModelConfig model;  // stored as its HF config.json
};

nlohmann::json train_state_to_json(const TrainState& state);
TrainState train_state_from_json(const nlohmann::json& j, const std::string& source);

// An optimizer's state for the whole flat buffer, in host memory and laid out by the ParamTable: one array per state
// tensor, named and ordered as the optimizer's state_names(). optim.safetensors holds state `name` of parameter p as
// "<name>.<p>", the states one after the other (AdamW: every exp_avg.<p>, then every exp_avg_sq.<p>); an optimizer
// without state (plain SGD) still writes the file, with no tensors, so that every resume reads the same files.
struct OptimizerState {
  std::vector<std::string> names;
  std::vector<std::vector<float>> tensors;  // tensors[i] is state names[i]: table.total() floats

  OptimizerState() = default;
  // `names`, each `floats` zeros.
  OptimizerState(std::vector<std::string> names, size_t floats);
};

// The tensors of one checkpoint, laid out by `table`.
struct CheckpointTensors {
  const model::ParamTable* table = nullptr;
  const float* params = nullptr;
  const OptimizerState* optimizer = nullptr;  // null: weights only (no optim.safetensors)
};

std::string checkpoint_dir_name(int64_t step);  // "step00001000"

// Writes root/<checkpoint_dir_name(step)>/ as described above, then deletes complete checkpoints with a
// lower step beyond the newest `keep` (0: keep all; the one just written always stays). Returns its path.
std::string write_checkpoint(const std::string& root, const CheckpointTensors& tensors, const TrainState& state,
                             int64_t keep);

// The checkpoint a run resumes from: the one `root/latest` names if it is complete, else the complete one
// (MANIFEST.json present) with the highest step; "" when there is none.
std::string find_latest_checkpoint(const std::string& root);

// Makes safe what a crash can leave under root before a run starts, and says what it did (one line each):
// *.partial directories (a save cut short; only write_checkpoint makes them) are removed; a step directory without
// a manifest (a save or a deletion cut short, or an edited checkpoint) is renamed to <name>.incomplete, never
// deleted, unless it is `keep` (train.resume_from), which stays as it is. A step name that is a symbolic link is
// left alone and reported: discovery and rotation skip links (a linked checkpoint belongs to someone else).
struct IncompleteCheckpoints {
  std::vector<std::string> removed;    // *.partial directories
  std::vector<std::string> set_aside;  // step directories renamed
  std::vector<std::string> linked;     // step names that are symbolic links: left alone, never this run's
};
IncompleteCheckpoints set_aside_incomplete_checkpoints(const std::string& root, const std::string& keep);

// True when `path` is a replica checkpoint directory (holds train_state.json).
bool is_checkpoint_dir(const std::string& path);

// What a reader of a checkpoint loads: the weights (generate, eval, export-hf, init_from) or also the optimizer's
// state (a resume); MANIFEST.json must list each of those files.
enum class CheckpointRead { weights, weights_and_optimizer };

// Verifies MANIFEST.json (every file's size and checksum, and that it lists the files `what` reads), then reads
// train_state.json.
TrainState read_checkpoint_state(const std::string& dir, CheckpointRead what);
// The model config stored in train_state.json (no checksum pass: for sizing a model before loading it).
model::ModelConfig read_checkpoint_model_config(const std::string& dir);
// The resolved recipe YAML stored in train_state.json (no checksum pass).
std::string read_checkpoint_recipe(const std::string& dir);

// Reads the weights (and, when `optimizer` is given, the state tensors it names, into its tensors) into buffers laid
// out by `table`, checking every tensor's presence and shape. A checkpoint of an optimizer with other state is refused
// naming both sets of names. Call read_checkpoint_state() first to verify checksums.
void read_checkpoint_tensors(const std::string& dir, const model::ParamTable& table, float* params,
                             OptimizerState* optimizer = nullptr);

// The checkpoint's model.safetensors, checked and not yet read: the manifest verified (read_checkpoint_state), the
// step it was written at, every tensor of `table` there in fp32 with its shape, and nothing else (ckpt/model_tensors.h
// reads it tensor by tensor).
std::unique_ptr<SafetensorsReader> open_checkpoint_weights(const std::string& dir, const model::ParamTable& table);

// Raises replica::Error naming both configs' differing keys when a checkpoint's model is not `expected`.
void check_same_model(const model::ModelConfig& saved, const model::ModelConfig& expected, const std::string& dir);

}  // namespace replica::ckpt
