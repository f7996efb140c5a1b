// The trainer's loop is position → batch → TrainStep → observers: what each step (and each evaluation) did goes to
// the observers, which act on their own cadence (evaluation, checkpoints, profile, memorisation alarm), and to one
// MetricsSink, which fans the numbers out to their destinations (metrics.jsonl, TensorBoard, the console).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "replica/eval/alarm.h"
#include "replica/eval/heldout.h"
#include "replica/eval/suite.h"
#include "replica/train/step.h"

namespace replica::train {

// One optimizer step as the loop saw it.
struct StepRecord {
  int64_t step = 0;  // 1-based
  uint64_t epoch = 0;
  int64_t batch = 0;   // within the epoch
  int64_t tokens = 0;  // trained on so far, over all ranks
  StepResult result{};
  double seconds = 0, tokens_per_s = 0;
  std::optional<double> mfu = std::nullopt;  // none: no trustworthy peak (and on ranks other than 0)
  double comm_seconds = 0;  // of this step, in the control communicator
  bool last = false;        // the run's last step (train.stop_at or train.max_steps)
  bool stop = false;        // a signal asked the run to stop: the loop ends after this step
};

// One evaluation: the held-out loss, the suite's results and the alarm's report, when they exist.
struct EvalRecord {
  int64_t step = 0;  // after this many steps
  eval::HeldoutResult heldout{};
  std::optional<eval::SuiteResults> suite = std::nullopt;  // each surface's result (eval::run_suite)
  std::optional<eval::AlarmReport> alarm = std::nullopt;
  double seconds = 0;  // the evaluation's wall time, held-out set and suite
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void before_step(int64_t /*step*/) {}
  virtual void after_step(const StepRecord& /*record*/) {}
  // Every evaluation passes every observer before it is written, so an observer may add to it.
  virtual void after_evaluation(EvalRecord& /*record*/) {}
  virtual void at_end() {}    // after the last step
  virtual void on_error() {}  // the run ends on an error: keep what can be kept (no step or evaluation follows)

  // State an observer keeps across steps survives a resume: every checkpoint records save_state() under
  // state_name() in train_state.json ("observers"), and a resumed run hands it to restore_state() before its first
  // step, so the run goes on as if it had not stopped. "" (the default): nothing to keep.
  virtual std::string state_name() const { return ""; }
  virtual nlohmann::json save_state() const { return nullptr; }
  virtual void restore_state(const nlohmann::json& /*state*/, const std::string& /*source*/) {}
};

// Every stateful observer's state, by name (ckpt::TrainState::observers).
nlohmann::json observer_states(const std::vector<std::unique_ptr<Observer>>& observers);
// Hands each stateful observer its part of `states` (none: it starts empty, as in a checkpoint written before it
// kept state); `source` names the checkpoint in errors.
void restore_observer_states(const std::vector<std::unique_ptr<Observer>>& observers, const nlohmann::json& states,
                             const std::string& source);

// Where metrics go. A destination is one class of this interface (train/metrics_sinks.h).
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void step(const StepRecord& record) = 0;
  virtual void evaluation(const EvalRecord& record) = 0;
  // After an evaluation and at the end of the run, once every destination has taken the record: a destination that
  // reads what another wrote (report.html from metrics.jsonl) does it here, so the order of destinations does not
  // matter.
  virtual void flush() {}
};

// Every destination.
class FanOutSink final : public MetricsSink {
 public:
  void add(std::unique_ptr<MetricsSink> sink) { sinks_.push_back(std::move(sink)); }
  void step(const StepRecord& r) override {
    for (auto& s : sinks_) s->step(r);
  }
  void evaluation(const EvalRecord& r) override {
    for (auto& s : sinks_) s->evaluation(r);
    flush();
  }
  void flush() override {
    for (auto& s : sinks_) s->flush();
  }

 private:
  std::vector<std::unique_ptr<MetricsSink>> sinks_;
};

}  // namespace replica::train
