// Checkpoints every checkpoint.every steps, after the last step and when a signal stops the run: the weights and
// optimizer state gathered to rank 0, which writes them in the background (ckpt/saver.h).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "replica/ckpt/saver.h"
#include "replica/metrics/progress.h"
#include "replica/train/observer.h"
#include "replica/train/observer_configs.h"

namespace replica::train {

class CheckpointObserver final : public Observer {
 public:
  // state(step): what the checkpoint after `step` records besides the tensors (train_state in checkpointing.h).
  using State = std::function<ckpt::TrainState(int64_t step)>;
  // Checkpoints go to `root` (run.dir/checkpoints).
  CheckpointObserver(const CheckpointConfig& config, const std::string& root, TrainStep& step, State state,
                     metrics::Progress& console);
  void after_step(const StepRecord& record) override;
  void at_end() override;  // waits for the last write

 private:
  void report(const std::optional<ckpt::SaveResult>& saved);

  CheckpointConfig config_;
  TrainStep& step_;
  State state_;
  metrics::Progress& console_;
  ckpt::CheckpointSaver saver_;
};

}  // namespace replica::train
