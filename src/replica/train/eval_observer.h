// In-loop evaluation every eval.every steps, before the first and after the last (eval.every = 0: none at all): the
// held-out loss of data.validation_paths and, with eval.suite, the suite's surfaces. Rank 0 evaluates over its whole weights; with sharded weights every rank runs it (gathering the
// groups in step with the others) and rank 0 publishes the result.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/data/tokenizer.h"
#include "replica/eval/suite.h"
#include "replica/train/observer.h"
#include "replica/train/observer_configs.h"

namespace replica::train {

class EvalObserver final : public Observer {
 public:
  // publish(record) hands an evaluation to the other observers and the metrics sink (rank 0 only).
  using Publish = std::function<void(EvalRecord&)>;
  // heldout_files: data.validation_paths, read in the step's sequence length.
  EvalObserver(const EvalConfig& config, const std::vector<std::string>& heldout_files, const model::ModelConfig& model,
               TrainStep& step, Publish publish);

  // Evaluates after `step` steps (0: before the first); the held-out loss, or none when evaluation is off, without
  // validation data or on a rank that takes no part.
  std::optional<double> evaluate(int64_t step);
  // Every eval.every steps, except after the last step (the trainer's final evaluation follows the loop) and after a
  // signal (the run exits fast).
  void after_step(const StepRecord& record) override;

 private:
  TrainStep& step_;
  int64_t every_, max_docs_;
  bool root_, evaluates_;
  Publish publish_;
  std::unique_ptr<data::FslDataset> heldout_;
  std::optional<eval::SuiteSpec> suite_;
  std::optional<data::Tokenizer> tokenizer_;
};

}  // namespace replica::train
