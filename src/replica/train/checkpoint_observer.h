// Checkpoints every checkpoint.every steps, after the last step and when a signal stops the run: the weights and
// optimizer state gathered to rank 0, which writes them in the background (ckpt/saver.h).
#pragma once
#include <optional>

#include "replica/ckpt/saver.h"
#include "replica/data/loader.h"
#include "replica/metrics/progress.h"
#include "replica/train/observer.h"

namespace replica::train {

class CheckpointObserver final : public Observer {
 public:
  CheckpointObserver(const Recipe& recipe, const model::ModelConfig& model, TrainStep& step,
                     const data::DataLoader& loader, metrics::Progress& console);
  void after_step(const StepRecord& record) override;
  void at_end() override;  // waits for the last write

 private:
  void report(const std::optional<ckpt::SaveResult>& saved);

  const Recipe& recipe_;
  const model::ModelConfig& model_;
  TrainStep& step_;
  const data::DataLoader& loader_;
  metrics::Progress& console_;
  ckpt::CheckpointSaver saver_;
};

}  // namespace replica::train
