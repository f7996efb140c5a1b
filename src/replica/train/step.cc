// TrainStep: targets, the filter's masking, the micro-batches' gradients, clipping, skip-step and the update.
#include "replica/train/step.h"

#include <algorithm>

#include "replica/core/error.h"

namespace replica::train {

StepConfig step_config(const Recipe& r) {
  StepConfig c;
  c.seq_len = r.data.seq_len;
  c.global_batch = r.data.global_batch_size;
  c.micro_batch = r.data.micro_batch_size;
  c.precision = r.train.precision;
  c.remat = r.train.remat;
  c.sharding.weights = r.train.shard_weights;
  c.adamw = r.optim.adamw;
  c.schedule = schedule_config(r);
  c.skip_step = r.optim.skip_step;
  c.clip = r.optim.clip;
  c.z_loss = r.optim.z_loss;
  return c;
}

TrainStep::TrainStep(const model::ModelConfig& model, const StepConfig& config, dist::Communicator& control,
                     dist::Communicator& data, Backend& backend)
    : config_(config),
      model_(model, config.precision, config.remat, backend),
      dp_(control, data, backend, model_.table(), config.global_batch, config.micro_batch, config.sharding),
      optimizer_(std::make_unique<optim::AdamW>(model_.table(), config.adamw, dp_.shard_parts(), backend)),
      skip_step_(config.skip_step) {}

// This rank's whole buffer through the model's own view (its bf16 copy follows the weights' version), or with sharded
// weights the groups gathered from the shards.
model::WeightSource& TrainStep::weights() {
  return dp_.shards_weights() ? dp_.gathered_weights()
                              : model_.whole_weights(dp_.whole_weights(), dp_.weights_version());
}

StepResult TrainStep::run(const data::Batch& batch, int64_t step) { return update(gradients(batch), step); }

// OLMo-core divides by the labels the batch would have without the instance filter.
static int64_t loss_denominator(const StepConfig& c) { return c.global_batch * (c.seq_len - 1); }

LossSums TrainStep::gradients(const data::Batch& batch) {
  const int64_t T = config_.seq_len, M = config_.micro_batch, rows = config_.global_batch / dp_.comm().size();
  check(batch.seq_len == T && batch.rows == rows, "TrainStep: a batch of {} rows of {} tokens, expected {} of {}",
        batch.rows, batch.seq_len, rows, T);
  targets_ = model::shifted_targets(batch.tokens.data(), batch.rows, T);
  for (int64_t row = 0; row < batch.rows; row++)  // instances masked by the filter keep no labels
    if (!batch.keep[size_t(row)]) std::fill_n(targets_.begin() + row * T, T, kIgnoreLabel);
  const float grad_scale = 1.0f / float(loss_denominator(config_));
  model::WeightSource& weights = this->weights();
  return dp_.gradients([&](int64_t k, model::GradientSink& sink) {  // local micro-batch k: rows [k M, (k + 1) M)
    const model::MicroBatch micro_batch{batch.tokens.data() + k * M * T, targets_.data() + k * M * T, M, T};
    return model_.forward_backward(weights, sink, micro_batch, float(config_.z_loss), grad_scale);
  });
}

StepResult TrainStep::update(const LossSums& sums, int64_t step) {
  const double denominator = double(loss_denominator(config_));
  StepResult result;
  result.ce = sums.ce / denominator;
  result.z_loss = config_.z_loss * sums.z / denominator;
  result.grad_norm = dp_.clip(config_.clip);
  const std::optional<double> watched_norm = config_.clip > 0 ? std::optional(result.grad_norm) : std::nullopt;
  result.skipped = config_.skip_step.enabled && !skip_step_.record(result.ce, watched_norm);
  result.lr = optim::learning_rate(config_.schedule, step);
  if (!result.skipped) dp_.step(*optimizer_, result.lr);
  return result;
}

}  // namespace replica::train
