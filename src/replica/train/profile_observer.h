// train.profile: the device time per operation of every step after the first (which pays for one-time setup),
// evaluation and checkpoints left out; rank 0 writes it to run.dir/profile.md at the end.
#pragma once
#include <string>

#include "replica/kernels/backend.h"
#include "replica/kernels/profile.h"
#include "replica/metrics/progress.h"
#include "replica/train/observer.h"

namespace replica::train {

class ProfileObserver final : public Observer {
 public:
  // `backend` profiles (Backend::profile(true) said so); first_step: the first step this run takes (a resumed run's
  // too), whose time is left out.
  ProfileObserver(Backend& backend, int64_t first_step, const std::string& path, metrics::Progress& console);
  void before_step(int64_t step) override;
  void after_step(const StepRecord& record) override;
  void at_end() override;
  void on_error() override { at_end(); }  // the profile of the steps before it: a run that fails is worth profiling

 private:
  Backend& backend_;
  int64_t first_step_;
  std::string path_;  // empty on ranks other than 0
  metrics::Progress& console_;
  ProfileSum profile_;
  int64_t steps_ = 0;
  double seconds_ = 0;
};

}  // namespace replica::train
