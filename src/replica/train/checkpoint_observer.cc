// CheckpointObserver: the cadence of checkpoints and the line each one prints.
#include "replica/train/checkpoint_observer.h"

#include <fmt/core.h>

#include "replica/train/rank_sync.h"

namespace replica::train {

CheckpointObserver::CheckpointObserver(const CheckpointConfig& config, const std::string& root, TrainStep& step,
                                       State state, metrics::Progress& console)
    : config_(config),
      step_(step),
      state_(std::move(state)),
      console_(console),
      saver_(root, config.keep, step.optimizer().state_names(),
             step.dp().comm().rank() == 0 ? step.model().table().total() : 0) {}

void CheckpointObserver::after_step(const StepRecord& r) {
  const int64_t every = config_.every;
  if ((every > 0 && r.step % every == 0) || r.last || r.stop) report(save_from_rank0(saver_, step_, state_(r.step)));
  report(saver_.poll());
}

void CheckpointObserver::at_end() { report(saver_.wait()); }

void CheckpointObserver::report(const std::optional<ckpt::SaveResult>& s) {
  if (s)
    console_.line(fmt::format("checkpoint {} (loop paused {:.3f} s to snapshot, written in {:.2f} s)", s->dir,
                              s->snapshot_s, s->write_s));
}

}  // namespace replica::train
