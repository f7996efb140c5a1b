// The destinations of a run's metrics, each formatting a step and an evaluation for its medium.
#include "replica/train/metrics_sinks.h"

#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "replica/eval/suite.h"
#include "replica/metrics/metrics_log.h"
#include "replica/metrics/metrics_schema.h"
#include "replica/metrics/slowdown.h"
#include "replica/metrics/tensorboard.h"
#include "replica/report/report.h"

namespace replica::train {
namespace {

namespace jsonl = metrics::jsonl;

// Seconds since the Unix epoch, to the millisecond: when a line was written (W&B's `_timestamp`), so the cost of an
// evaluation or a checkpoint can be read afterwards as the gap between two lines.
double wall_time() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return double(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) / 1e3;
}

// One JSON object per step and per evaluation (DESIGN.md §4), losses at round-trip precision.
class JsonlSink final : public MetricsSink {
 public:
  explicit JsonlSink(const std::string& path) : log_(path) {}
  void step(const StepRecord& r) override {
    const StepResult& s = r.result;
    log_.write({{jsonl::kStep, r.step},
                {jsonl::kTokens, r.tokens},
                {jsonl::kLoss, s.loss()},
                {jsonl::kCe, s.ce},
                {jsonl::kZLoss, s.z_loss},
                {jsonl::kLr, s.lr},
                {jsonl::kGradNorm, s.grad_norm},
                {jsonl::kSkipped, s.skipped},
                {jsonl::kTokensPerSecond, r.tokens_per_s},
                {jsonl::kMfu, r.mfu ? nlohmann::json(*r.mfu) : nlohmann::json(nullptr)},
                {jsonl::kEpoch, r.epoch},
                {jsonl::kBatch, r.batch},
                {jsonl::kCommSeconds, r.comm_seconds},
                {jsonl::kStepSeconds, r.seconds},
                {jsonl::kTime, wall_time()}});
  }
  void evaluation(const EvalRecord& e) override {
    nlohmann::json record = {{jsonl::kHeldoutLoss, e.heldout.loss}, {jsonl::kHeldoutTokens, e.heldout.tokens}};
    if (e.suite) record[jsonl::kSuite] = e.suite->to_json();
    if (const std::optional<eval::AlarmReport>& a = e.alarm)
      record[jsonl::kAlarm] = {{"from_step", a->first_step},
                               {"train_loss", {a->train_before, a->train_now}},
                               {"heldout_loss", {a->heldout_before, a->heldout_now}}};
    nlohmann::json files = nlohmann::json::object();
    for (const eval::HeldoutFile& f : e.heldout.files) files[f.label] = f.loss;
    record[jsonl::kFiles] = files;
    log_.write({{jsonl::kStep, e.step},
                {jsonl::kEval, record},
                {jsonl::kEvalSeconds, e.seconds},
                {jsonl::kTime, wall_time()}});
  }

 private:
  metrics::MetricsLog log_;
};

class TensorBoardSink final : public MetricsSink {
 public:
  explicit TensorBoardSink(const std::string& dir) : tb_(dir) {}
  void step(const StepRecord& r) override {
    const StepResult& s = r.result;
    tb_.scalar("train/loss", s.loss(), r.step);
    tb_.scalar("train/ce", s.ce, r.step);
    tb_.scalar("train/z_loss", s.z_loss, r.step);
    tb_.scalar("train/lr", s.lr, r.step);
    tb_.scalar("train/grad_norm", s.grad_norm, r.step);
    tb_.scalar("train/skipped", s.skipped ? 1.0 : 0.0, r.step);
    tb_.scalar("train/tokens_per_s", r.tokens_per_s, r.step);
    if (r.mfu) tb_.scalar("train/mfu", *r.mfu, r.step);
  }
  void evaluation(const EvalRecord& e) override {
    if (e.suite)
      for (const auto& [name, value] : eval::flat_scalars(e.suite->to_json())) tb_.scalar(name, value, e.step);
    if (e.alarm) tb_.scalar("eval/memorisation_alarm", 1.0, e.step);
    for (const eval::HeldoutFile& f : e.heldout.files) tb_.scalar("heldout/" + f.label, f.loss, e.step);
    tb_.scalar("heldout/loss", e.heldout.loss, e.step);
  }
  void flush() override { tb_.flush(); }

 private:
  metrics::TensorBoardWriter tb_;
};

// run.dir/report.html, rewritten from metrics.jsonl (which writes every line through) when the sinks flush: after
// each evaluation, once every sink has taken it, and at the end of the run.
// The page is a by-product: one that cannot be written (report.html a directory, a full disk) is a warning, once,
// and the run goes on; metrics.jsonl holds everything it shows.
class ReportSink final : public MetricsSink {
 public:
  explicit ReportSink(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  void step(const StepRecord&) override {}
  void evaluation(const EvalRecord&) override {}
  void flush() override { write(); }

 private:
  void write() {
    try {
      report::write_run_report(run_dir_);
    } catch (const std::exception& e) {
      if (!warned_)
        fmt::print(stderr,
                   "warning: the run report was not written ({}); training goes on (replica report {} makes "
                   "it later)\n",
                   e.what(), run_dir_);
      warned_ = true;
    }
  }
  std::string run_dir_;
  bool warned_ = false;
};

class ConsoleSink final : public MetricsSink {
 public:
  ConsoleSink(metrics::Progress& progress, int64_t last_step) : progress_(progress), last_step_(last_step) {}
  void step(const StepRecord& r) override {
    const StepResult& s = r.result;
    progress_.step({r.step, last_step_, s.loss(), s.lr, s.grad_norm, r.tokens_per_s, r.mfu, s.skipped});
    if (std::optional<std::string> note = slowdown_.observe(r.step, r.tokens_per_s)) progress_.line(*note);
  }
  void evaluation(const EvalRecord& e) override {
    if (e.suite) progress_.line(fmt::format("eval step {}:\n{}", e.step, eval::format_results(*e.suite)));
    if (e.alarm) progress_.line(e.alarm->message());
    std::string per_file;
    for (const eval::HeldoutFile& f : e.heldout.files) per_file += fmt::format("  {} {:.4f}", f.label, f.loss);
    progress_.line(
        fmt::format("eval step {}: held-out loss {:.4f} over {} tokens ({} docs truncated to data.seq_len "
                    "{}) |{}",
                    e.step, e.heldout.loss, e.heldout.tokens, e.heldout.docs, e.heldout.seq_len, per_file));
  }

 private:
  metrics::Progress& progress_;
  int64_t last_step_;
  metrics::SlowdownWatch slowdown_;
};

}  // namespace

std::optional<double> logged_heldout_loss(const std::string& run_dir, int64_t step) {
  std::ifstream log(std::filesystem::path(run_dir) / "metrics.jsonl");
  std::optional<double> loss;
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (jsonl::step_of(j) == step && j.contains(jsonl::kEval) && j[jsonl::kEval].contains(jsonl::kHeldoutLoss) &&
        j[jsonl::kEval][jsonl::kHeldoutLoss].is_number())
      loss = j[jsonl::kEval][jsonl::kHeldoutLoss].get<double>();
  }
  return loss;
}

std::unique_ptr<MetricsSink> run_metrics(const Recipe& r, bool root, metrics::Progress& console) {
  namespace fs = std::filesystem;
  auto sinks = std::make_unique<FanOutSink>();
  if (root) {
    sinks->add(std::make_unique<JsonlSink>((fs::path(r.run.dir) / "metrics.jsonl").string()));
    sinks->add(std::make_unique<TensorBoardSink>((fs::path(r.run.dir) / "tb").string()));
    sinks->add(std::make_unique<ReportSink>(r.run.dir));
  }
  sinks->add(std::make_unique<ConsoleSink>(console, r.last_step()));
  return sinks;
}

}  // namespace replica::train
