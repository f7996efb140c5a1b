// Recipe: every setting of a training run, in sections (run, model, data, optim, schedule, train,
// checkpoint, eval), read from YAML with `section.key=value` overrides; to_yaml() writes it back resolved.
// Each setting is declared once: the recipe holds the modules' own configs by value (the step's, the loader's, the
// observers') and one table of keys points into them, each row with its rule and what a resume may do with it
// (recipe.cc). step_config and loader_config add only what is derived from several keys.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replica/core/config_fields.h"
#include "replica/data/loader.h"
#include "replica/data/remote_files.h"
#include "replica/kernels/backend.h"
#include "replica/metrics/progress.h"
#include "replica/train/observer_configs.h"
#include "replica/train/step_config.h"

namespace replica::train {

struct Recipe {
  struct Run {
    std::string dir = "runs/default";  // run directory: config.yaml, metrics.jsonl, tb/, checkpoints/
    std::string name = "default";
  } run;
  struct Model {
    std::string config;     // YAML model file or HF config.json (may be empty with init_from): the whole model,
                            // its RoPE scaling included (configs/models/olmo3_7b_stage3.yaml)
    std::string init_from;  // HF model dir, replica or OLMo-core checkpoint; empty: fresh init (train.seed)
                            // (ignored when the run resumes from a checkpoint of its own)
  } model;
  // The files of data.*; loader_config turns them into the loader's file list.
  struct Data {
    std::vector<std::string> paths;             // token files, in order (or mix_file)
    std::string mix_file;                       // one token file per line: `path` or `label,path`
    std::vector<std::string> validation_paths;  // held-out token files for eval.every
    bool allow_fingerprint_change = false;      // resume even though the data fingerprint changed
    // Where a mix file's relative paths are (OLMo-core's base_dir: https://olmo-data.org or a local copy of that
    // tree; empty: the mix file's own directory or URL).
    std::string base_dir;
  } data;
  // The step's own config (train/step_config.h): data.seq_len, data.global_batch_size, data.micro_batch_size;
  // optim.name, lr (schedule.lr), weight_decay, betas, eps, host_moments (optimizer.adamw), momentum (optimizer.sgd),
  // clip, skip_step*, z_loss;
  // schedule.*; train.precision, remat, float8, shard_weights, context_parallel, cp_head_stride.
  StepConfig step = [] {  // OLMo 3's batch: 512 instances of 8192 tokens
    StepConfig c;
    c.seq_len = 8192;
    c.global_batch = 512;
    return c;
  }();
  // The loader's own settings (data/loader.h): data.seed (OLMo-core NumpyDataLoaderConfig.seed); data.instance_filter
  // (OLMo-core's repeated n-gram filter, off as in the OLMo 3 7B recipe; part of the data fingerprint);
  // data.packing, source_group_size, long_doc_strategy, document_boundaries, work_dir (OLMo-core's
  // NumpyPackedFSLDataset; none: fixed-length chunks, as in stages 1 and 2); data.source_permutation_seed (its
  // source file shuffle; null: none); data.read_ahead (batches read ahead of the step when a file is remote). Its
  // files, shape and vocabulary are derived: loader_config.
  data::LoaderConfig loader = [] {
    data::LoaderConfig c;
    c.seed = 34521;
    c.read_ahead = 2;
    return c;
  }();
  // How http(s):// data files are read (data/remote_files.h): data.cache_dir, data.cache_bytes (the local cache of
  // ranges read; empty: none), data.http_timeout (seconds without a byte), data.http_retries. None of them changes
  // what a run computes. Where what is learned of the files is kept is derived: remote_config.
  data::RemoteConfig remote;
  struct Optim {
    bool load_state = false;  // load the optimizer state from model.init_from (a replica or OLMo-core checkpoint)
  } optim;
  struct Schedule {
    // Horizons in tokens: when step.schedule's t_max (part2_t_max) is 0, t_max = ceil(t_max_tokens / tokens per
    // step), else train.max_steps (schedule_config).
    double t_max_tokens = 0;
    double part2_t_max_tokens = 0;
  } schedule;
  struct Train {
    int64_t max_steps = 1000;  // the run's length (and the schedule horizon unless the schedule sets one)
    int64_t stop_at = 0;       // stop after this step without changing the horizon; 0 = max_steps
    // Stop at the first step boundary this many seconds after the start (loading included), as a signal would: the
    // checkpoint saved, the final evaluation skipped; 0 = no limit. Fits a run into a scheduler's time slot.
    double max_seconds = 0;
    std::string resume_from;   // checkpoint to resume from; empty: run.dir/checkpoints/latest if there is one
    // Keys a resume may change although they change what the run computes (train/resume_check.h); others are
    // refused.
    std::vector<std::string> allow_change;
    Device device = Device::cpu;  // where the model, optimizer and loss run (kernels/backend.h)
    int64_t threads = 0;          // 0 = one per core that other work leaves free at start (core/threads.h)
    int64_t seed = 0;             // parameter init seed
    bool profile = false;  // the device time per operation of every step after the first, to run.dir/profile.md
    int64_t log_every = 1;
    // The console: auto = a live line on a terminal (every log_every-th kept), plain lines when stdout is not a
    // terminal or under mpirun; plain = plain lines always.
    metrics::ProgressStyle progress = metrics::ProgressStyle::automatic;
  } train;
  CheckpointConfig checkpoint;
  EvalConfig eval;
  AlarmConfig alarm;  // eval.alarm_window, eval.alarm_margin

  int64_t tokens_per_step() const { return step.global_batch * step.seq_len; }
  // The step this invocation stops after: train.stop_at when set, else train.max_steps.
  int64_t last_step() const { return train.stop_at > 0 ? std::min(train.stop_at, train.max_steps) : train.max_steps; }
  std::string to_yaml() const;  // every key, resolved; load_recipe_text(to_yaml()) gives the same recipe
};

// Reads a recipe file (or text), applies `section.key=value` overrides (values parsed as YAML) and
// validates. Unknown sections/keys, wrong types, bad values and (with check_files) missing files raise
// replica::Error naming the key. Relative paths are relative to the working directory (and the error says so). With
// check_files, glob patterns in data.paths / data.validation_paths are replaced by the files they match (name order).
Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides = {}, bool check_files = true);
Recipe load_recipe_text(const std::string& yaml, const std::string& source,
                        const std::vector<std::string>& overrides = {}, bool check_files = true);
// The file checks of a recipe loaded without them, for what training reads (the model and data.paths / mix_file,
// globs expanded) but not the held-out files: `replica data audit` reads no held-out data.
void resolve_training_files(Recipe& recipe, const std::string& source);

// Every key of the recipe with what a resume may do with it (the rows of recipe.cc), in the table's order.
std::vector<std::pair<std::string, config::OnResume>> resume_rules();

optim::ScheduleConfig schedule_config(const Recipe& recipe);  // horizons resolved to steps

// The step the recipe runs: recipe.step with the schedule's horizons resolved to steps. TrainStep is given it, and
// `replica plan` sizes memory with it.
StepConfig step_config(const Recipe& recipe);

// The data loader of the run: recipe.loader with the recipe's files, the step's sequence length and global batch, and
// the model's vocabulary (ids at or above it are corrupt data). The trainer and `replica data` use it, so both report
// the same fingerprint.
data::LoaderConfig loader_config(const Recipe& recipe, const model::ModelConfig& model);
data::LoaderConfig loader_config(const Recipe& recipe, uint32_t vocab_size);  // a model's vocab_size

// How the run reads http(s):// files: recipe.remote, with the run's remote index in run.dir/remote_files.json (so a
// restart neither HEADs every file again nor trusts a file that changed). Given to data::configure_remote_files
// before loader_config, which may read a remote mix file.
data::RemoteConfig remote_config(const Recipe& recipe);

}  // namespace replica::train
