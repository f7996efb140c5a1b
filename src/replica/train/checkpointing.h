// The trainer's checkpoint glue, as one process sees it: where a run starts (its own checkpoint, model.init_from, or a
// fresh init), what a checkpoint records of the run, and metrics.jsonl after a resume. train/rank_sync.h runs it on
// rank 0 and shares the result with the other ranks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/ckpt/checkpoint.h"
#include "replica/data/loader.h"
#include "replica/optim/optimizer.h"
#include "replica/optim/skip_step.h"
#include "replica/train/recipe.h"

namespace replica::train {

std::string checkpoint_root(const Recipe& recipe);  // run.dir/checkpoints

// The model the recipe trains: model.config, else the model of model.init_from (HF dir or checkpoint).
model::ModelConfig recipe_model_config(const Recipe& recipe);

struct RunStart {
  int64_t step = 0;     // steps already done (the loop continues at step + 1)
  std::string message;  // one line for the log
  // The optimizer state of the checkpoint started from, whole-buffer and in host memory, by the names start_run was
  // given; not loaded (no tensors, a step count of 0) for a fresh optimizer.
  bool optimizer_loaded = false;
  ckpt::OptimizerState optimizer;
  int64_t optimizer_step_count = 0;
  nlohmann::json observers = nlohmann::json::object();  // the checkpoint's observer state (ckpt::TrainState)
  // A resume: {"step", "tokens", "checkpoint", "saved_world_size", "changes": [what the resume changed, as printed]},
  // which start_run_all_ranks appends to run.dir/resumes.jsonl with the world size it resumes at; null otherwise.
  nlohmann::json resume = nullptr;
};

// Fills params (host memory, zero on entry), the optimizer state and the skip-step history (empty on entry). The
// optimizer's state tensors are `state_names` (optim::Optimizer::state_names): a checkpoint must hold exactly those.
//  1. resume from train.resume_from, else from the run's newest complete checkpoint: weights, optimizer state and
//     step count, skip-step history and step restored; the model, global batch, data position and data
//     fingerprint must match (data.allow_fingerprint_change overrides the last). metrics.jsonl keeps only
//     lines up to that step. Incomplete checkpoints left by a crash are removed first.
//  2. else model.init_from: weights from an HF dir, a replica checkpoint or an OLMo-core checkpoint (AI2's); with
//     optim.load_state, also the optimizer state and step count of the checkpoint (stage transition: steps,
//     schedule and data start afresh).
//  3. else a fresh init with train.seed.
// Cases 2 and 3 start at step 0: metrics.jsonl (of a run killed before its first checkpoint) is emptied.
RunStart start_run(const Recipe& recipe, const model::ParamTable& table, const data::DataLoader& loader,
                   const std::vector<std::string>& state_names, float* params, optim::SkipStep& skip_step);

// What the checkpoint after `step` records besides the tensors.
ckpt::TrainState train_state(const Recipe& recipe, const model::ModelConfig& config, int64_t step,
                             const data::DataLoader& loader, const optim::Optimizer& optimizer,
                             const optim::SkipStep& skip_step);

// Rewrites `path` (atomically) keeping the lines whose "step" is at most `step`. Only an unterminated last line that
// is not a record (a crash mid-write) is dropped; any other line that is not a JSON object with an integer "step"
// raises replica::Error naming path:line, and the file is left as it is. A missing file is left missing.
void truncate_metrics(const std::string& path, int64_t step);

}  // namespace replica::train
