// ProfileObserver: takes the backend's profile around each step and tabulates the sum.
#include "replica/train/profile_observer.h"

#include <fmt/core.h>

#include "replica/core/file.h"

namespace replica::train {

ProfileObserver::ProfileObserver(Backend& backend, int64_t first_step, const std::string& path,
                                 metrics::Progress& console)
    : backend_(backend), first_step_(first_step), path_(path), console_(console) {}

void ProfileObserver::before_step(int64_t) { backend_.take_profile(); }  // drops what ran between steps

void ProfileObserver::after_step(const StepRecord& r) {
  if (r.step == first_step_) return;
  profile_.add(backend_.take_profile());
  steps_++;
  seconds_ += r.seconds;
}

void ProfileObserver::at_end() {
  backend_.profile(false);
  if (path_.empty() || steps_ == 0) return;
  write_text_file_atomic(path_,
                         fmt::format("# Device time per operation, steps {} to {} (rank 0)\n\n{}", first_step_ + 1,
                                     first_step_ + steps_, profile_.table(steps_, 1e3 * seconds_ / double(steps_))));
  console_.line(fmt::format("profile of {} steps: {}", steps_, path_));
}

}  // namespace replica::train
