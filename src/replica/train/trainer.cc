// Trainer: one rank of a data-parallel job (one process: W = 1). The step: forward/backward each micro-batch
// of the rank's row[r::W] slice with the loss scaled by 1/labels of the whole global batch, reduce over
// ranks, clip, skip-step check, AdamW on the rank's shard (dist/data_parallel.h); checkpoints saved in the
// background by rank 0 (train/checkpointing.h decides where a run starts). Rank 0 writes the run directory.
#include "replica/train/trainer.h"

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>

#include "replica/ckpt/saver.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/threads.h"
#include "replica/data/loader.h"
#include "replica/dist/collectives.h"
#include "replica/eval/alarm.h"
#include "replica/eval/heldout.h"
#include "replica/eval/suite.h"
#include "replica/kernels/profile.h"
#include "replica/metrics/metrics_log.h"
#include "replica/metrics/progress.h"
#include "replica/metrics/tensorboard.h"
#include "replica/model/flops.h"
#include "replica/optim/skip_step.h"
#include "replica/train/checkpointing.h"
#include "replica/train/distributed.h"

namespace replica {

namespace {

std::atomic<bool> stop_requested{false};

void request_stop(int) { stop_requested = true; }

std::vector<data::MixEntry> mix_of(const std::vector<std::string>& paths, const std::string& mix_file) {
  return mix_file.empty() ? data::mix_from_paths(paths) : data::read_mix_file(mix_file);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TrainSummary train(const Recipe& r, Communicator& comm) {
  return train(r, comm, backend_for(r.train.device, local_rank()));
}

TrainSummary train(const Recipe& r, Communicator& comm, Backend& backend) {
  check_trainable(r);
  set_num_threads(int(r.train.threads));
  namespace fs = std::filesystem;
  const bool root = comm.rank() == 0;
  fs::create_directories(r.run.dir);

  // Model and parameters (filled by start_run below) on the recipe's device.
  const ModelConfig config = recipe_model_config(r);
  const std::unique_ptr<Communicator> device_comm = connect_data(comm, backend);  // NCCL on GPUs
  Communicator& data_comm = device_comm ? *device_comm : comm;
  Olmo3 model(config, r.train.precision, r.train.remat, backend);
  const ParamTable& table = model.table();

  // Data: OLMo-core's global order; each rank reads row[r::W] of every global batch.
  data::LoaderConfig lc;
  lc.files = mix_of(r.data.paths, r.data.mix_file);
  lc.seq_len = r.data.seq_len;
  lc.seed = uint64_t(r.data.seed);
  lc.global_batch = r.data.global_batch_size;
  lc.vocab_size = uint32_t(config.vocab_size);
  data::DataLoader loader(lc);
  check(loader.batches_per_epoch() > 0, "data: {} instances of {} tokens are fewer than one global batch of {}",
        loader.dataset().num_instances(), r.data.seq_len, r.data.global_batch_size);
  std::unique_ptr<data::FslDataset> heldout;
  if (!r.data.validation_paths.empty())
    heldout = std::make_unique<data::FslDataset>(eval::labelled_files(r.data.validation_paths), r.data.seq_len,
                                                 data::TokenDtype::u32, uint32_t(config.vocab_size));

  DataParallel dp(comm, data_comm, backend, table, adamw_config(r), r.data.global_batch_size,
                  r.data.micro_batch_size, Sharding{r.train.shard_weights});
  const ScheduleConfig schedule = schedule_config(r);
  SkipStep skip_step(r.optim.skip_step_window, r.optim.skip_step_sigma);
  const RunStart start = start_run_all_ranks(r, dp, table, loader, skip_step);
  // config.yaml once the start is known to be valid: a refused resume overwrites nothing.
  if (root) write_text_file_atomic((fs::path(r.run.dir) / "config.yaml").string(), r.to_yaml());
  CheckpointSaver saver(checkpoint_root(r), r.checkpoint.keep, root ? table.total() : 0);

  std::optional<MetricsLog> metrics;
  std::optional<TensorBoardWriter> tb;
  if (root) {
    metrics.emplace((fs::path(r.run.dir) / "metrics.jsonl").string());
    tb.emplace((fs::path(r.run.dir) / "tb").string());
  }
  Progress progress(r.train.log_every);
  const int64_t T = r.data.seq_len, G = r.data.global_batch_size, M = r.data.micro_batch_size;
  const double flops_per_token = training_flops_per_token(config, T);
  const double peak = root ? backend.peak_flops(r.train.precision) : 1.0;  // per rank; only rank 0 reports MFU
  const int64_t last_step = r.train.stop_at > 0 ? std::min(r.train.stop_at, r.train.max_steps) : r.train.max_steps;

  progress.line(fmt::format("replica train: {} ({:.1f}M parameters, {}), {} steps of {} tokens, data {}", r.run.name,
                            double(table.count()) / 1e6, precision_name(r.train.precision), last_step,
                            r.tokens_per_step(), loader.fingerprint()));
  progress.line(start.message);
  progress.line(fmt::format("machine: {} rank(s) ({}) on {}, peak {:.0f} GFLOP/s per rank ({}, the MFU "
                            "denominator); {:.3g} FLOPs per token",
                            comm.size(), data_comm.name(), backend.describe(), peak / 1e9,
                            precision_name(r.train.precision), flops_per_token));

  TrainSummary summary;
  summary.run_dir = r.run.dir;
  eval::MemorisationAlarm alarm(r.eval.alarm_window, r.eval.alarm_margin);
  std::optional<eval::SuiteSpec> suite;
  std::optional<data::Tokenizer> tokenizer;
  // Evaluation runs on rank 0 over its whole weights; with sharded weights every rank runs it, gathering the groups
  // in step with the others, and rank 0 reports.
  const bool evaluates = root || dp.shards_weights();
  if (!r.eval.suite.empty() && evaluates) {
    suite = eval::load_suite(r.eval.suite);
    tokenizer.emplace(data::Tokenizer::load_default());
  }
  auto evaluate = [&](int64_t step) {
    if (!heldout || !evaluates) return -1.0;
    WeightSource& weights = step_weights(dp, model);
    eval::HeldoutResult h = eval::heldout_loss(model, weights, *heldout, M, r.eval.batches * M);
    nlohmann::json record = {{"heldout_loss", h.loss}, {"heldout_tokens", h.tokens}};
    std::optional<eval::SuiteResults> suite_results;
    if (suite) {
      suite_results = eval::run_suite(model, weights, *suite, *tokenizer, [](const std::string&) {});
      record["suite"] = suite_results->to_json();
    }
    if (!root) return h.loss;
    if (suite) {
      for (const auto& [name, value] : eval::flat_scalars(record["suite"])) tb->scalar(name, value, step);
      progress.line(fmt::format("eval step {}:\n{}", step, eval::format_results(*suite_results)));
    }
    if (std::optional<eval::AlarmReport> a = alarm.evaluation(step, h.loss)) {
      record["memorisation_alarm"] = {{"from_step", a->first_step}, {"train_loss", {a->train_before, a->train_now}},
                                      {"heldout_loss", {a->heldout_before, a->heldout_now}}};
      tb->scalar("eval/memorisation_alarm", 1.0, step);
      progress.line(a->message());
    }
    nlohmann::json files = nlohmann::json::object();
    std::string per_file;
    for (const eval::HeldoutFile& f : h.files) {
      files[f.label] = f.loss;
      tb->scalar("heldout/" + f.label, f.loss, step);
      per_file += fmt::format("  {} {:.4f}", f.label, f.loss);
    }
    tb->scalar("heldout/loss", h.loss, step);
    record["files"] = files;
    metrics->write({{"step", step}, {"eval", record}});
    progress.line(fmt::format("eval step {}: held-out loss {:.4f} over {} tokens |{}", step, h.loss, h.tokens, per_file));
    return h.loss;
  };
  summary.steps = start.step;
  if (start.step == 0) summary.heldout_initial = evaluate(0);

  // REPLICA_PROFILE=1: the device time per operation of every step after the first (which pays for one-time
  // setup), evaluation and checkpoints left out; rank 0 writes it to run_dir/profile.md at the end.
  ProfileSum profile;
  int64_t profiled_steps = 0;
  double profiled_s = 0;
  const bool profile_asked = profile_requested();
  const bool profiling = profile_asked && backend.profile(true);
  if (profile_asked && !profiling)
    progress.line(fmt::format("REPLICA_PROFILE=1: the {} backend does not profile; ignored",
                              device_name(backend.device())));

  stop_requested = false;
  auto previous_int = std::signal(SIGINT, request_stop);
  auto previous_term = std::signal(SIGTERM, request_stop);
  std::vector<int32_t> targets;
  auto saved = [&](const std::optional<SaveResult>& s) {
    if (s) progress.line(fmt::format("checkpoint {} (loop paused {:.3f} s to snapshot, written in {:.2f} s)", s->dir,
                                     s->snapshot_s, s->write_s));
  };
  for (int64_t step = start.step + 1; step <= last_step; step++) {
    if (profiling) backend.take_profile();  // drops what ran between steps
    const auto step_start = std::chrono::steady_clock::now();
    const double comm_before = comm.comm_seconds;
    const auto [epoch, b] = loader.position(step - 1);
    data::Batch batch = loader.batch(epoch, b, comm.rank(), comm.size());
    targets = shifted_targets(batch.tokens.data(), batch.rows, T);
    for (int64_t row = 0; row < batch.rows; row++)  // instances masked by the filter keep no labels
      if (!batch.keep[size_t(row)]) std::fill(targets.begin() + row * T, targets.begin() + (row + 1) * T, kIgnoreLabel);
    dp.arrange(batch.tokens, T);  // micro-batch k = rows [k M, (k + 1) M)
    dp.arrange(targets, T);
    // OLMo-core divides by the labels the batch would have without the instance filter.
    const int64_t denominator = G * (T - 1);

    WeightSource& weights = step_weights(dp, model);
    const LossSums sums = dp.gradients([&](int64_t k, GradientSink& sink) {
      return model.forward_backward(weights, sink,
                                    Batch{batch.tokens.data() + k * M * T, targets.data() + k * M * T, M, T},
                                    float(r.optim.z_loss), 1.0f / float(denominator));
    });
    const double ce = sums.ce / double(denominator), z_loss = r.optim.z_loss * sums.z / double(denominator);
    const double grad_norm = dp.clip(r.optim.clip);
    const bool take_step = !r.optim.skip_step ||
                           skip_step.record(ce, r.optim.clip > 0 ? std::optional<double>(grad_norm) : std::nullopt);
    const double lr = learning_rate(schedule, step);
    if (take_step) dp.step(lr);
    const bool stop = any_rank(comm, stop_requested);
    backend.synchronize();  // the step's kernels are done before it is timed
    const double step_s = seconds_since(step_start);
    if (profiling && step > start.step + 1) {
      profile.add(backend.take_profile());
      profiled_steps++;
      profiled_s += step_s;
    }
    const double tokens_per_s = double(G * T) / step_s;
    const double mfu = flops_per_token * tokens_per_s / (peak * double(comm.size()));
    if (root) {
      metrics->write({{"step", step}, {"tokens", step * G * T}, {"loss", ce + z_loss}, {"ce", ce}, {"z_loss", z_loss},
                      {"lr", lr}, {"grad_norm", grad_norm}, {"skipped", !take_step}, {"tokens_per_s", tokens_per_s},
                      {"mfu", mfu}, {"epoch", epoch}, {"batch", b}, {"comm_s", comm.comm_seconds - comm_before}});
      tb->scalar("train/loss", ce + z_loss, step);
      tb->scalar("train/lr", lr, step);
      tb->scalar("train/grad_norm", grad_norm, step);
      tb->scalar("train/tokens_per_s", tokens_per_s, step);
    }
    progress.step({step, last_step, ce + z_loss, lr, grad_norm, tokens_per_s, mfu, !take_step});
    summary.steps = step;
    summary.final_loss = ce + z_loss;
    alarm.add_train_loss(ce + z_loss);
    if (r.eval.every > 0 && step % r.eval.every == 0 && step != last_step) evaluate(step);
    if ((r.checkpoint.every > 0 && step % r.checkpoint.every == 0) || step == last_step || stop)
      saved(save_from_rank0(saver, dp, table, train_state(r, config, step, loader, dp.optimizer(), skip_step)));
    saved(saver.poll());
    if (stop) {
      summary.interrupted = true;
      progress.line(fmt::format("stopping after step {} (signal)", step));
      break;
    }
  }
  saved(saver.wait());
  if (profiling) backend.profile(false);
  if (root && profiled_steps > 0) {
    const std::string path = (fs::path(r.run.dir) / "profile.md").string();
    write_text_file_atomic(path, fmt::format("# Device time per operation, steps {} to {} (rank 0)\n\n{}",
                                             summary.steps - profiled_steps + 1, summary.steps,
                                             profile.table(profiled_steps, 1e3 * profiled_s / double(profiled_steps))));
    progress.line(fmt::format("profile of {} steps: {}", profiled_steps, path));
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  if (summary.steps > start.step || start.step == 0) summary.heldout_final = evaluate(summary.steps);
  if (tb) tb->flush();
  return summary;
}

}  // namespace replica
