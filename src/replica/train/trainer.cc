// Trainer: one rank of a data-parallel job (one process: W = 1). The loop is position → batch → TrainStep →
// observers: metrics to one sink (metrics.jsonl, TensorBoard, the console), then evaluation, checkpoints, the profile
// and the memorisation alarm, each on its own cadence. train/checkpointing.h decides where a run starts; rank 0
// writes the run directory.
#include "replica/train/trainer.h"

#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <utility>

#include "replica/core/directory_lock.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/threads.h"
#include "replica/distributed/collectives.h"
#include "replica/distributed/launch.h"
#include "replica/metrics/peak.h"
#include "replica/model/flops.h"
#include "replica/train/alarm_observer.h"
#include "replica/train/checkpoint_observer.h"
#include "replica/train/eval_observer.h"
#include "replica/train/metrics_sinks.h"
#include "replica/train/profile_observer.h"
#include "replica/train/rank_sync.h"
#include "replica/train/stop_signal.h"

namespace replica::train {
namespace {

// "40 steps", or with train.stop_at "to step 12 of 40", and the LR schedule's horizon where it is not the run's.
std::string run_length(const Recipe& r) {
  std::string length = r.last_step() < r.train.max_steps
                           ? fmt::format("to step {} of {} (train.stop_at)", r.last_step(), r.train.max_steps)
                           : fmt::format("{} steps", r.train.max_steps);
  if (const int64_t t_max = schedule_config(r).t_max; t_max != r.train.max_steps)
    length += fmt::format(" on an LR schedule of {} steps", t_max);
  return length;
}

void print_header(metrics::Progress& console, const Recipe& r, const TrainStep& step, const data::DataLoader& loader,
                  const RunStart& start, const distributed::Communicator& comm, const distributed::Communicator& data_comm,
                  Backend& backend, const metrics::Peak& peak, double flops_per_token, const std::string& threads) {
  console.line(fmt::format("replica train: {} ({:.1f}M parameters, {}), {} tokens per step, {}, data {}", r.run.name,
                           double(step.table().count()) / 1e6, precision_name(r.step.precision), r.tokens_per_step(),
                           run_length(r), loader.fingerprint()));
  console.line(start.message);
  console.line(
      fmt::format("machine: {} rank(s) ({}) on {}, peak {:.0f} GFLOP/s per rank ({}, {}; the MFU denominator); "
                  "{:.3g} FLOPs per token; attention {}",
                  comm.size(), data_comm.name(), backend.describe(), peak.flops / 1e9, precision_name(r.step.precision),
                  peak.source, flops_per_token, attention_kernel_name(r.step.attention)));
  if (!threads.empty() && r.train.device == Device::cpu)
    console.line(fmt::format("threads: {} (train.threads=0; train.threads=N to choose)", threads));
  for (size_t f = 0; f < loader.dataset().num_files(); f++)
    if (std::string hint = loader.dataset().file(f).dtype_hint(); !hint.empty()) console.line("warning: " + hint);
  if (r.step.context.degree > 1)
    console.line(fmt::format("context parallel: {} ranks per sequence, {} data-parallel replica(s), {} tokens each",
                             r.step.context.degree, step.data_ranks(), r.step.seq_len / r.step.context.degree));
}

}  // namespace

TrainSummary train(const Recipe& r, distributed::Communicator& comm) {
  return train(r, comm, backend_for(r.train.device, distributed::local_gpu()));
}

TrainSummary train(const Recipe& recipe, distributed::Communicator& comm, Backend& backend) {
  const auto started = std::chrono::steady_clock::now();  // train.max_seconds counts from here
  namespace fs = std::filesystem;
  const std::string threads = set_num_threads(recipe.train.threads, distributed::processes_on_this_machine());
  const bool root = comm.rank() == 0;
  Recipe r = recipe;  // as run: the kernel the backend resolved is what config.yaml and checkpoints record
  r.step.attention = backend.resolve_attention(recipe.step.attention);

  // Everything that can be refused is checked before the run directory is touched.
  const model::ModelConfig config = recipe_model_config(r);
  check(r.step.seq_len <= config.max_seq_len, "data.seq_len={} exceeds max_position_embeddings={} of the model ({})",
        r.step.seq_len, config.max_seq_len, r.model.config.empty() ? r.model.init_from : r.model.config);
  const std::unique_ptr<distributed::Communicator> device_comm = connect_data(comm, backend);  // NCCL on GPUs
  distributed::Communicator& data_comm = device_comm ? *device_comm : comm;
  TrainStep step(config, step_config(r), comm, data_comm, backend);
  data::configure_remote_files(remote_config(r));  // before loader_config, which may read a remote mix file
  data::DataLoader loader(loader_config(r, config));
  check(loader.batches_per_epoch() > 0, "data: {} instances of {} tokens are fewer than one global batch of {}",
        loader.dataset().num_instances(), r.step.seq_len, r.step.global_batch);
  std::optional<DirectoryLock> lock;  // held until every observer (the checkpoint saver's thread) is gone
  // Observers, in the order they see each step: the alarm takes the step's loss before an evaluation compares it.
  // Each evaluation passes every observer, then goes to the metrics.
  std::vector<std::unique_ptr<Observer>> observers;
  std::unique_ptr<MetricsSink> metrics;
  auto publish = [&](EvalRecord& e) {
    for (auto& o : observers) o->after_evaluation(e);
    metrics->evaluation(e);
  };
  auto evaluation = std::make_unique<EvalObserver>(r.eval, r.data.validation_paths, config, step,
                                                   publish);  // loads the held-out set and suite
  EvalObserver& eval = *evaluation;

  // One process at a time in a run directory (rank 0 writes it).
  if (root) {
    check(!fs::exists(r.run.dir) || fs::is_directory(r.run.dir), "run.dir: {} exists and is not a directory",
          r.run.dir);
    if (!fs::exists(r.run.dir) && fs::is_symlink(r.run.dir))
      fail("run.dir: {} is a symbolic link to {}, which does not exist (create that directory, or remove the link)",
           r.run.dir, fs::read_symlink(r.run.dir).string());
    fs::create_directories(r.run.dir);
    lock.emplace(r.run.dir, fmt::format("run.dir {}", r.run.dir));
  }
  const RunStart start = start_run_all_ranks(r, step, loader);
  // config.yaml once the start is known to be valid: a refused resume overwrites nothing.
  if (root) write_text_file_atomic((fs::path(r.run.dir) / "config.yaml").string(), r.to_yaml());

  // A live line only where it can work: one process on its own terminal (under mpirun the ranks share a pty).
  metrics::Progress console(r.train.log_every, r.train.progress == metrics::ProgressStyle::automatic &&
                                                   comm.size() == 1 && metrics::stdout_is_own_terminal());
  metrics = run_metrics(r, root, console);
  const double flops_per_token = model::training_flops_per_token(config, r.step.seq_len);
  // Per rank; only rank 0 measures it and reports MFU.
  metrics::Peak peak = root ? metrics::stable_peak(backend, r.step.precision) : metrics::Peak{};
  print_header(console, r, step, loader, start, comm, data_comm, backend, peak, flops_per_token, threads);

  observers.push_back(std::make_unique<AlarmObserver>(r.alarm));
  observers.push_back(std::move(evaluation));
  observers.push_back(std::make_unique<CheckpointObserver>(
      r.checkpoint, checkpoint_root(r), step,
      [&](int64_t s) {
        ckpt::TrainState state = train_state(r, config, s, loader, step.optimizer(), step.skip_step());
        state.observers = observer_states(observers);
        return state;
      },
      console));
  if (r.train.profile && backend.profile(true))
    observers.push_back(std::make_unique<ProfileObserver>(
        backend, start.step + 1, root ? (fs::path(r.run.dir) / "profile.md").string() : "", console));
  else if (r.train.profile)
    console.line(fmt::format("train.profile: the {} backend does not profile; ignored", device_name(backend.device())));
  restore_observer_states(observers, start.observers, r.run.dir);
  if (start.step == r.last_step())
    console.line(fmt::format("nothing to train: the run is at step {} of {}", start.step, r.last_step()));

  TrainSummary summary{.run_dir = r.run.dir, .steps = start.step};
  // A resumed run repeats the summary of the whole run: its step-0 held-out loss is in metrics.jsonl.
  summary.heldout_initial = start.step == 0 ? eval.evaluate(0) : logged_heldout_loss(r.run.dir, 0);
  try {
    bool mfu_noted = false;
    const StopSignal signal;
    for (int64_t s = start.step + 1; s <= r.last_step() && !summary.interrupted; s++) {
      for (auto& o : observers) o->before_step(s);
      const auto began = std::chrono::steady_clock::now();
      const double comm_before = comm.comm_seconds();
      StepRecord record{.step = s, .last = s == r.last_step()};
      std::tie(record.epoch, record.batch) = loader.position(s - 1);
      record.result = step.run(
          loader.batch(record.epoch, record.batch, step.data_rank(), step.data_ranks(), r.step.micro_batch), s);
      const bool out_of_time =
          r.train.max_seconds > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >= r.train.max_seconds;
      summary.by_signal = distributed::any_rank(comm, signal.asked());
      // Every rank has the recipe, so all take the same branch to the collective.
      record.stop = summary.by_signal || (r.train.max_seconds > 0 && distributed::any_rank(comm, out_of_time));
      backend.synchronize();  // the step's kernels are done before it is timed
      record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      record.tokens = s * r.tokens_per_step();
      record.tokens_per_s = double(r.tokens_per_step()) / record.seconds;
      const double achieved = flops_per_token * record.tokens_per_s / double(comm.size());  // per rank
      if (root) record.mfu = metrics::model_flops_utilization(achieved, peak.flops);
      if (root && !record.mfu && !mfu_noted) {
        // A peak below what a step achieves was measured under load: measured again once (after this step's time).
        const metrics::Peak low = std::exchange(peak, metrics::remeasured_peak(backend, r.step.precision, peak));
        record.mfu = metrics::model_flops_utilization(achieved, peak.flops);
        if (record.mfu)
          console.line(
              fmt::format("peak measured again at step {}: {:.0f} GFLOP/s achieved was above the {:.0f} "
                          "GFLOP/s peak ({}); now {:.0f} GFLOP/s ({})",
                          s, achieved / 1e9, low.flops / 1e9, low.source, peak.flops / 1e9, peak.source));
        else
          console.line(
              fmt::format("MFU n/a from step {}: {:.0f} GFLOP/s achieved is above the peak, {:.0f} GFLOP/s "
                          "measured again ({}); measure it on a quiet machine by deleting {}",
                          s, achieved / 1e9, peak.flops / 1e9, peak.source, metrics::peak_cache_path()));
        mfu_noted = true;
      }
      record.comm_seconds = comm.comm_seconds() - comm_before;
      metrics->step(record);
      for (auto& o : observers) o->after_step(record);
      summary.steps = s;
      summary.final_loss = record.result.loss();
      summary.interrupted = record.stop;
    }
  } catch (...) {
    // The run ends on an error: each observer keeps what it can, and every metric destination writes what it has
    // (TensorBoard's buffer, report.html), whatever order they come in.
    for (auto& o : observers) o->on_error();
    try {
      metrics->flush();
    } catch (const std::exception&) {  // the error being raised is the one to report
    }
    throw;
  }
  for (auto& o : observers) o->at_end();  // the checkpoint of the last step is complete
  // A signal asks for a fast exit (a scheduler's grace period is short): the checkpoint is saved, the final
  // evaluation is not run.
  if (summary.interrupted)
    console.line(
        fmt::format("stopped after step {} {}: checkpoint saved, final evaluation skipped; the same command "
                    "resumes",
                    summary.steps,
                    summary.by_signal ? "by a signal" : fmt::format("at train.max_seconds={}", r.train.max_seconds)));
  else if (summary.steps > start.step || start.step == 0)
    summary.heldout_final = eval.evaluate(summary.steps);
  else
    summary.heldout_final = logged_heldout_loss(r.run.dir, summary.steps);
  metrics->flush();
  return summary;
}

}  // namespace replica::train
