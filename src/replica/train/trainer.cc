// Trainer: one process, one rank. The step: zero grads, forward/backward each micro-batch with the loss
// scaled by 1/labels of the whole global batch, clip, skip-step check, AdamW.
#include "replica/train/trainer.h"

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <set>

#include "replica/ckpt/hf.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/threads.h"
#include "replica/data/loader.h"
#include "replica/eval/heldout.h"
#include "replica/metrics/metrics_log.h"
#include "replica/metrics/progress.h"
#include "replica/metrics/tensorboard.h"
#include "replica/model/flops.h"
#include "replica/optim/clip.h"
#include "replica/optim/skip_step.h"

namespace replica {

namespace {

std::atomic<bool> stop_requested{false};

void request_stop(int) { stop_requested = true; }

std::vector<data::MixEntry> mix_of(const std::vector<std::string>& paths, const std::string& mix_file) {
  return mix_file.empty() ? data::mix_from_paths(paths) : data::read_mix_file(mix_file);
}

// Validation files are labelled by their stem, or by their directory when stems repeat
// (data/tokens/<domain>/heldout.npy → "<domain>").
std::vector<data::MixEntry> validation_files(const std::vector<std::string>& paths) {
  std::vector<data::MixEntry> files = data::mix_from_paths(paths);
  std::set<std::string> stems;
  for (const data::MixEntry& f : files) stems.insert(f.label);
  if (stems.size() < files.size())
    for (data::MixEntry& f : files) f.label = std::filesystem::path(f.path).parent_path().filename().string();
  return files;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TrainSummary train(const Recipe& r) {
  check_trainable(r);
  set_num_threads(int(r.train.threads));
  namespace fs = std::filesystem;
  fs::create_directories(r.run.dir);
  write_text_file_atomic((fs::path(r.run.dir) / "config.yaml").string(), r.to_yaml());

  // Model and parameters.
  const bool from_hf = !r.model.init_from.empty();
  const ModelConfig config = load_model_config(r.model.config.empty() ? r.model.init_from : r.model.config);
  Olmo3 model(config, r.train.precision, r.train.remat);
  const ParamTable& table = model.table();
  std::vector<float> params(table.total(), 0.0f), grads(table.total(), 0.0f);
  if (from_hf) {
    load_hf_params(r.model.init_from, table, params.data());
  } else {
    init_params(config, table, uint64_t(r.train.seed), params.data());
  }

  // Data: OLMo-core's global order, one rank.
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
    heldout = std::make_unique<data::FslDataset>(validation_files(r.data.validation_paths), r.data.seq_len,
                                                 data::TokenDtype::u32, uint32_t(config.vocab_size));

  AdamW adamw(table, adamw_config(r));
  const ScheduleConfig schedule = schedule_config(r);
  SkipStep skip_step(r.optim.skip_step_window, r.optim.skip_step_sigma);

  MetricsLog metrics((fs::path(r.run.dir) / "metrics.jsonl").string());
  TensorBoardWriter tb((fs::path(r.run.dir) / "tb").string());
  Progress progress(r.train.log_every);
  const int64_t T = r.data.seq_len, G = r.data.global_batch_size, M = r.data.micro_batch_size;
  const double flops_per_token = training_flops_per_token(config, T);
  const double peak = measure_gemm_peak(r.train.precision);
  const int64_t last_step = r.train.stop_at > 0 ? std::min(r.train.stop_at, r.train.max_steps) : r.train.max_steps;

  progress.line(fmt::format("replica train: {} ({:.1f}M parameters, {}), {} steps of {} tokens, data {}", r.run.name,
                            double(table.count()) / 1e6, precision_name(r.train.precision), last_step,
                            r.tokens_per_step(), loader.fingerprint()));
  progress.line(fmt::format("machine: {} threads, GEMM peak {:.0f} GFLOP/s ({}); {:.3g} FLOPs per token",
                            num_threads(), peak / 1e9, precision_name(r.train.precision), flops_per_token));

  TrainSummary summary;
  summary.run_dir = r.run.dir;
  auto evaluate = [&](int64_t step) {
    if (!heldout) return -1.0;
    HeldoutResult h = heldout_loss(model, params.data(), *heldout, M, r.eval.batches);
    nlohmann::json files = nlohmann::json::object();
    std::string per_file;
    for (const HeldoutFile& f : h.files) {
      files[f.label] = f.loss;
      tb.scalar("heldout/" + f.label, f.loss, step);
      per_file += fmt::format("  {} {:.4f}", f.label, f.loss);
    }
    tb.scalar("heldout/loss", h.loss, step);
    metrics.write({{"step", step}, {"eval", {{"heldout_loss", h.loss}, {"heldout_tokens", h.tokens}, {"files", files}}}});
    progress.line(fmt::format("eval step {}: held-out loss {:.4f} over {} tokens |{}", step, h.loss, h.tokens, per_file));
    return h.loss;
  };
  summary.heldout_initial = evaluate(0);

  stop_requested = false;
  auto previous_int = std::signal(SIGINT, request_stop);
  auto previous_term = std::signal(SIGTERM, request_stop);
  std::vector<int32_t> targets;
  for (int64_t step = 1; step <= last_step; step++) {
    const auto start = std::chrono::steady_clock::now();
    const auto [epoch, b] = loader.position(step - 1);
    const data::Batch batch = loader.batch(epoch, b);
    targets = shifted_targets(batch.tokens.data(), G, T);
    for (int64_t row = 0; row < G; row++)  // instances masked by the filter keep no labels
      if (!batch.keep[size_t(row)]) std::fill(targets.begin() + row * T, targets.begin() + (row + 1) * T, kIgnoreLabel);
    // OLMo-core divides by the labels the batch would have without the instance filter.
    const int64_t denominator = G * (T - 1);

    std::fill(grads.begin(), grads.end(), 0.0f);
    LossSums sums;
    for (int64_t row = 0; row < G; row += M)
      sums += model.forward_backward(params.data(), grads.data(),
                                     Batch{batch.tokens.data() + row * T, targets.data() + row * T, M, T},
                                     float(r.optim.z_loss), 1.0f / float(denominator));
    const double ce = sums.ce / double(denominator), z_loss = r.optim.z_loss * sums.z / double(denominator);
    const double grad_norm = r.optim.clip > 0 ? clip_grad_norm(grads.data(), grads.size(), r.optim.clip)
                                              : global_norm(grads.data(), grads.size());
    const bool take_step = !r.optim.skip_step ||
                           skip_step.record(ce, r.optim.clip > 0 ? std::optional<double>(grad_norm) : std::nullopt);
    const double lr = learning_rate(schedule, step);
    if (take_step) adamw.step(params.data(), grads.data(), lr);

    const double step_s = seconds_since(start);
    const double tokens_per_s = double(G * T) / step_s, mfu = flops_per_token * tokens_per_s / peak;
    metrics.write({{"step", step}, {"tokens", step * G * T}, {"loss", ce + z_loss}, {"ce", ce}, {"z_loss", z_loss},
                   {"lr", lr}, {"grad_norm", grad_norm}, {"skipped", !take_step}, {"tokens_per_s", tokens_per_s},
                   {"mfu", mfu}, {"epoch", epoch}, {"batch", b}});
    tb.scalar("train/loss", ce + z_loss, step);
    tb.scalar("train/lr", lr, step);
    tb.scalar("train/grad_norm", grad_norm, step);
    tb.scalar("train/tokens_per_s", tokens_per_s, step);
    progress.step({step, last_step, ce + z_loss, lr, grad_norm, tokens_per_s, mfu, !take_step});
    summary.steps = step;
    summary.final_loss = ce + z_loss;
    if (r.eval.every > 0 && step % r.eval.every == 0 && step != last_step) evaluate(step);
    if (stop_requested) {
      summary.interrupted = true;
      progress.line(fmt::format("stopping after step {} (signal)", step));
      break;
    }
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  summary.heldout_final = evaluate(summary.steps);
  tb.flush();
  return summary;
}

}  // namespace replica
