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

 private:
  eval::MemorisationAlarm alarm_;
};

}  // namespace replica::train
