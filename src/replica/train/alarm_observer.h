// The memorisation alarm in the loop: it follows the training loss of every step and, at each evaluation, adds its
// report to the evaluation's record when training loss fell while held-out loss did not (eval/alarm.h).
#pragma once
#include "replica/eval/alarm.h"
#include "replica/train/observer.h"
#include "replica/train/observer_configs.h"

namespace replica::train {

class AlarmObserver final : public Observer {
 public:
  explicit AlarmObserver(const AlarmConfig& config) : alarm_(config.window, config.margin) {}
  void after_step(const StepRecord& r) override { alarm_.add_train_loss(r.result.loss()); }
  void after_evaluation(EvalRecord& e) override { e.alarm = alarm_.evaluation(e.step, e.heldout.loss); }
  // The evaluations the window compares and the training loss since the last: without them a resumed run could
  // not fire until `window` evaluations after the resume.
  std::string state_name() const override { return "memorisation_alarm"; }
  nlohmann::json save_state() const override { return alarm_.to_json(); }
  void restore_state(const nlohmann::json& state, const std::string& source) override {
    alarm_.load_json(state, source);
  }

 private:
  eval::MemorisationAlarm alarm_;
};

}  // namespace replica::train
