// Checkpoints every checkpoint.every steps, after the last step and when a signal stops the run: the weights and
// optimizer state gathered to rank 0, which writes them in the background (ckpt/saver.h).
#pragma once
#include <optional>

#include "replica/ckpt/saver.h"
#include "replica/data/loader.h"
#include "replica/metrics/progress.h"
#include "replica/train/observer.h"

namespace replica {

class CheckpointObserver final : public Observer {
 public:
  CheckpointObserver(const Recipe& recipe, const ModelConfig& model, TrainStep& step, const data::DataLoader& loader,
                     Progress& console);
  void after_step(const StepRecord& record) override;
  void at_end() override;  // waits for the last write

 private:
  void report(const std::optional<SaveResult>& saved);

  const Recipe& recipe_;
  const ModelConfig& model_;
  TrainStep& step_;
  const data::DataLoader& loader_;
  Progress& console_;
  CheckpointSaver saver_;
};

}  // namespace replica
