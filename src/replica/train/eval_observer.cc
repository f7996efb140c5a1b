// EvalObserver: the held-out set and suite of the recipe, evaluated on the step's weights.
#include "replica/train/eval_observer.h"

namespace replica::train {

EvalObserver::EvalObserver(const EvalConfig& config, const std::vector<std::string>& heldout_files,
                           const model::ModelConfig& model, TrainStep& step, Publish publish)
    : step_(step),
      every_(config.every),
      max_docs_(config.batches * step.config().micro_batch),
      root_(step.dp().comm().rank() == 0),
      evaluates_(root_ || step.dp().shards_weights()),
      publish_(std::move(publish)) {
  // eval.every = 0 switches evaluation off entirely, the evaluations before the first and after the last step too.
  if (every_ > 0 && !heldout_files.empty())
    heldout_ = std::make_unique<data::FslDataset>(eval::labelled_files(heldout_files), step.config().seq_len,
                                                  data::TokenDtype::u32, uint32_t(model.vocab_size));
  if (!config.suite.empty() && evaluates_) {  // loaded (and so checked) even when evaluation is off
    suite_ = eval::load_suite(config.suite);
    tokenizer_.emplace(data::Tokenizer::load_default());
  }
}

std::optional<double> EvalObserver::evaluate(int64_t step) {
  if (!heldout_ || !evaluates_) return std::nullopt;
  model::WeightSource& weights = step_.weights();
  EvalRecord record;
  record.step = step;
  record.heldout = eval::heldout_loss(step_.model(), weights, *heldout_, step_.config().micro_batch, max_docs_,
                                      eval::no_progress());
  if (suite_) record.suite = eval::run_suite(step_.model(), weights, *suite_, *tokenizer_, eval::no_progress());
  if (root_) publish_(record);
  return record.heldout.loss;
}

void EvalObserver::after_step(const StepRecord& r) {
  if (every_ > 0 && r.step % every_ == 0 && !r.last && !r.stop) evaluate(r.step);  // a signal: exit fast
}

}  // namespace replica::train
