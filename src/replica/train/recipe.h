// Recipe: every setting of a training run, in sections (run, model, data, optim, schedule, train,
// checkpoint, eval), read from YAML with `section.key=value` overrides; to_yaml() writes it back resolved.
// Where a module has its own config struct the recipe holds it (the keys point into it), and one function builds
// each composite config the modules need: loader_config (data/), schedule_config and step_config (train/step.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replica/data/instance_filter.h"
#include "replica/data/loader.h"
#include "replica/dist/context_parallel.h"
#include "replica/kernels/backend.h"
#include "replica/metrics/progress.h"
#include "replica/model/transformer.h"
#include "replica/optim/adamw.h"
#include "replica/optim/schedule.h"
#include "replica/optim/skip_step.h"

namespace replica::train {

struct Recipe {
  struct Run {
    std::string dir = "runs/default";  // run directory: config.yaml, metrics.jsonl, tb/, checkpoints/
    std::string name = "default";
  } run;
  struct Model {
    std::string config;     // YAML model file or HF config.json (may be empty with init_from): the whole model,
                            // its RoPE scaling included (configs/models/olmo3_7b_stage3.yaml)
    std::string init_from;  // HF model directory or replica checkpoint; empty: fresh init (train.seed)
                            // (ignored when the run resumes from a checkpoint of its own)
  } model;
  struct Data {
    std::vector<std::string> paths;  // token files, in order (or mix_file)
    std::string mix_file;            // one token file per line: `path` or `label,path`
    int64_t seq_len = 8192;
    int64_t seed = 34521;                       // data order seed (OLMo-core NumpyDataLoaderConfig.seed)
    int64_t global_batch_size = 512;            // instances per optimizer step
    int64_t micro_batch_size = 1;               // instances per forward/backward (gradient accumulation)
    std::vector<std::string> validation_paths;  // held-out token files for eval.every
    bool allow_fingerprint_change = false;      // resume even though the data fingerprint changed
    // data.instance_filter: OLMo-core's repeated n-gram filter with its default periods and count (off, as in the
    // OLMo 3 7B recipe); part of the data fingerprint.
    data::InstanceFilterConfig instance_filter;
    // data.packing, data.source_group_size, data.long_doc_strategy, data.document_boundaries: OLMo-core's
    // NumpyPackedFSLDataset (none: fixed-length chunks, as in stages 1 and 2), data.work_dir: where its packing is
    // cached (empty: nowhere); data.source_permutation_seed: its source file shuffle (null: none).
    data::PackingConfig packing;
    std::optional<int64_t> source_permutation_seed;
    // data.base_dir: where a mix file's relative paths are (OLMo-core's base_dir: https://olmo-data.org or a local
    // copy of that tree; empty: the mix file's directory). How http(s):// files are read (data/remote_files.h):
    // data.cache_dir and data.cache_bytes (the local cache of ranges read; empty: none), data.http_timeout
    // (seconds without a byte), data.http_retries; data.read_ahead: batches read ahead of the step when the mix
    // has remote files. None of them changes what a run computes.
    std::string base_dir;
    std::string cache_dir;
    int64_t cache_bytes = int64_t(100) << 30;
    double http_timeout = 60;
    int64_t http_retries = 5;
    int64_t read_ahead = 2;
  } data;
  struct Optim {
    // optim.weight_decay, optim.betas: [beta1, beta2], optim.eps, optim.host_moments (the peak LR is optim.lr)
    optim::AdamWConfig adamw;
    double clip = 1.0;  // max global grad norm; 0 = no clipping (then skip-step watches the loss only)
    optim::SkipStepConfig skip_step;  // optim.skip_step, optim.skip_step_window, optim.skip_step_sigma
    double z_loss = 1e-5;
    bool load_state = false;  // load Adam moments from model.init_from (a replica checkpoint)
  } optim;
  struct Schedule {
    // schedule.type, warmup_steps, alpha_f, t_max, decay_steps, stitch_step, part2_warmup_steps, part2_t_max; the
    // peak LR is optim.lr. A horizon of 0 here comes from its *_tokens key, else train.max_steps (schedule_config).
    optim::ScheduleConfig steps;
    double t_max_tokens = 0;  // horizon in tokens: t_max = ceil(t_max_tokens / tokens per step)
    double part2_t_max_tokens = 0;
  } schedule;
  struct Train {
    int64_t max_steps = 1000;  // the run's length (and the schedule horizon unless the schedule sets one)
    int64_t stop_at = 0;       // stop after this step without changing the horizon; 0 = max_steps
    std::string resume_from;   // checkpoint to resume from; empty: run.dir/checkpoints/latest if there is one
    // Keys a resume may change although they change what the run computes (train/resume_check.h); others are
    // refused.
    std::vector<std::string> allow_change;
    Device device = Device::cpu;  // where the model, optimizer and loss run (kernels/backend.h)
    Precision precision = Precision::fp32;
    int64_t threads = 0;  // 0 = all cores
    int64_t seed = 0;     // parameter init seed
    model::Remat remat = model::Remat::none;
    bool shard_weights = false;  // FSDP: shard the fp32 weights over the ranks too (dist/data_parallel.h)
    dist::ContextParallelConfig context;  // train.context_parallel, train.cp_head_stride (dist/context_parallel.h)
    // The attention kernel: auto is the backend's best measured one (the run records what it resolved to).
    AttentionKernel attention = AttentionKernel::automatic;
    // float8 block Linears as OLMo 3 stage 3 ran them (torchao's tensorwise recipe, model/float8_linear.h).
    bool float8 = false;
    bool profile = false;  // the device time per operation of every step after the first, to run.dir/profile.md
    int64_t log_every = 1;
    // The console: auto = a live line on a terminal (every log_every-th kept), plain lines when stdout is not a
    // terminal or under mpirun; plain = plain lines always.
    metrics::ProgressStyle progress = metrics::ProgressStyle::automatic;
  } train;
  struct Checkpoint {
    int64_t every = 1000;  // 0 = only at the end
    int64_t keep = 0;      // newest checkpoints kept; 0 = all
  } checkpoint;
  struct Eval {
    int64_t every = 0;    // also before the first and after the last step; 0 = no evaluation at all
    int64_t batches = 0;  // held-out documents per file and evaluation = batches × micro_batch_size; 0 = all
    std::string suite;    // eval suite YAML run at each evaluation besides the held-out loss; empty = none
    int64_t alarm_window = 3;   // memorisation alarm: evaluations compared (0 = off)
    double alarm_margin = 0.05; // nats: training loss fell more than this, held-out loss did not
  } eval;

  int64_t tokens_per_step() const { return data.global_batch_size * data.seq_len; }
  // The step this invocation stops after: train.stop_at when set, else train.max_steps.
  int64_t last_step() const { return train.stop_at > 0 ? std::min(train.stop_at, train.max_steps) : train.max_steps; }
  std::string to_yaml() const;  // every key, resolved; load_recipe_text(to_yaml()) gives the same recipe
};

// Reads a recipe file (or text), applies `section.key=value` overrides (values parsed as YAML) and
// validates. Unknown sections/keys, wrong types, bad values and (with check_files) missing files raise
// replica::Error naming the key. Relative paths are relative to the working directory (and the error says so). With check_files,
// glob patterns in data.paths / data.validation_paths are replaced by the files they match (name order).
Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides = {}, bool check_files = true);
Recipe load_recipe_text(const std::string& yaml, const std::string& source,
                        const std::vector<std::string>& overrides = {}, bool check_files = true);
// The file checks of a recipe loaded without them, for what training reads (the model and data.paths / mix_file,
// globs expanded) but not the held-out files: `replica data audit` reads no held-out data.
void resolve_training_files(Recipe& recipe, const std::string& source);


optim::ScheduleConfig schedule_config(const Recipe& recipe);  // horizons resolved to steps

// The data loader of the run: the recipe's files, sequence length, seed, global batch and instance filter, and the
// model's vocabulary (ids at or above it are corrupt data). The trainer and `replica data ... --config` use it, so
// both report the same fingerprint.
data::LoaderConfig loader_config(const Recipe& recipe, const model::ModelConfig& model);

}  // namespace replica::train
