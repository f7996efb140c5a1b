// TrainStep: targets, the filter's masking, the micro-batches' gradients, clipping, skip-step and the update.
#include "replica/train/step.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "replica/core/error.h"
#include "replica/data/tokenizer.h"
#include "replica/distributed/collectives.h"
#include "replica/model/document_offsets.h"

namespace replica::train {

size_t step_activation_bytes(const model::ModelConfig& model, const StepConfig& c) {
  const int64_t N = c.context.degree;
  return model::Transformer::activation_bytes(model, c.remat, c.micro_batch, c.seq_len / N, c.precision, N > 1,
                                              c.float8);
}

// The padding tail of a packed row: its last document when every token of it is the pad id; its length, or 0.
static int64_t padding_length(const int32_t* row, int64_t T, const std::vector<int32_t>& doc_lens) {
  if (doc_lens.empty()) return 0;
  const int64_t length = std::min<int64_t>(doc_lens.back(), T);
  const bool all_pad = std::all_of(row + T - length, row + T, [](int32_t id) { return id == int32_t(data::kDolma2Pad); });
  return all_pad ? length : 0;
}

std::vector<int32_t> step_targets(const data::Batch& batch) {
  const int64_t T = batch.seq_len;
  check(batch.doc_lens.empty() || int64_t(batch.doc_lens.size()) == batch.rows,
        "packed batch: document lengths for {} rows, expected one list per row ({})", batch.doc_lens.size(), batch.rows);
  std::vector<int32_t> targets = model::shifted_targets(batch.tokens.data(), batch.rows, T);
  if (batch.doc_lens.empty()) return targets;
  for (int64_t row = 0; row < batch.rows; row++) {  // no label predicts padding: positions T − pad − 1 … T − 1
    const int64_t pad = padding_length(batch.tokens.data() + row * T, T, batch.doc_lens[size_t(row)]);
    std::fill(targets.begin() + row * T + std::max<int64_t>(T - pad - 1, 0), targets.begin() + (row + 1) * T,
              kIgnoreLabel);
  }
  return targets;
}

TrainStep::TrainStep(const model::ModelConfig& model, const StepConfig& config, distributed::Communicator& control,
                     distributed::Communicator& data, Backend& backend)
    : config_(config),
      control_mesh_(control, int(config.context.degree)),
      data_mesh_(data, int(config.context.degree)),
      model_(model, config.precision, config.remat, backend),
      dp_(control, data, backend, model_.table(), config.global_batch, config.micro_batch, config.sharding,
          int(config.context.degree)),
      optimizer_(optim::make_optimizer(config.optimizer, model_.table(), dp_.shard_parts(), backend)),
      skip_step_(config.skip_step) {
  model_.use_float8(config.float8);
  model_.use_attention(config.attention);
  if (config.context.degree > 1) context_.emplace(data_mesh_.context(), backend, config.context.head_stride);
}

// This rank's whole buffer through the model's own view (its bf16 copy follows the weights' version), or with sharded
// weights the groups gathered from the shards.
model::WeightSource& TrainStep::weights() {
  return dp_.shards_weights() ? dp_.gathered_weights()
                              : model_.whole_weights(dp_.whole_weights(), dp_.weights_version());
}

StepResult TrainStep::run(const data::Batch& batch, int64_t step) { return update(gradients(batch), step); }

// OLMo-core's loss (batch_num_tokens_for_loss): each rank divides its sums by its own labels, counted as if the
// instance filter kept every row, and the ranks' gradients are averaged. Unpacked rows all have T − 1 labels, so that
// is the mean over G (T − 1); packed rows lose their padding's, so ranks may count differently. Each rank's loss sums
// are weighted so that the global sum over the global count (loss_denominator_) is OLMo-core's mean of rank means.
// Under context parallelism W counts data-parallel ranks and the labels are those of the whole rows, before the
// slicing (stage3.md §4.3): OLMo-core divides by N more and averages over the W N ranks of dp_cp; DataParallel
// sums over them instead, so each slice's gradient keeps the scale 1 / (W labels) and the slices add up to the row's.
LossSums TrainStep::gradients(const data::Batch& batch) {
  distributed::Communicator& data_ranks = control_mesh_.data();
  const int W = data_ranks.size();
  const int64_t T = config_.seq_len, M = config_.micro_batch, rows = config_.global_batch / W;
  check(batch.seq_len == T && batch.rows == rows, "TrainStep: a batch of {} rows of {} tokens, expected {} of {}",
        batch.rows, batch.seq_len, rows, T);
  targets_ = step_targets(batch);
  const int64_t labels = std::count_if(targets_.begin(), targets_.end(), [](int32_t t) { return t != kIgnoreLabel; });
  check(labels > 0, "TrainStep: rank {} has no labels in its {} rows (all padding)", data_ranks.rank(), rows);
  for (int64_t row = 0; row < batch.rows; row++)  // instances masked by the filter keep no labels
    if (!batch.keep[size_t(row)]) std::fill_n(targets_.begin() + row * T, T, kIgnoreLabel);
  std::vector<double> counts(size_t(W), 0.0);
  counts[size_t(data_ranks.rank())] = double(labels);
  std::vector<size_t> bounds(size_t(W) + 1, 0);
  for (int r = 0; r <= W; r++) bounds[size_t(r)] = size_t(r);
  distributed::all_gather(data_ranks, counts.data(), bounds);
  loss_denominator_ = 0;
  for (double n : counts) loss_denominator_ += n;
  const double rank_weight = loss_denominator_ / (double(W) * double(labels));  // 1 when every rank counts alike
  doc_offsets_.clear();
  if (!batch.doc_lens.empty())
    for (int64_t k = 0; k < rows / M; k++)
      doc_offsets_.push_back(
          model::document_offsets(std::span(batch.doc_lens).subspan(size_t(k * M), size_t(M)), T, k * M));
  const float grad_scale = 1.0f / float(int64_t(W) * labels);
  model::WeightSource& weights = this->weights();
  return dp_.gradients([&](int64_t k, model::GradientSink& sink) {  // local micro-batch k: rows [k M, (k + 1) M)
    const std::span<const int32_t> docs = doc_offsets_.empty() ? std::span<const int32_t>() : doc_offsets_[size_t(k)];
    model::MicroBatch micro_batch{batch.tokens.data() + k * M * T, targets_.data() + k * M * T, M, T, docs};
    if (context_) {  // this rank's slice of the one row, its labels shifted before the slicing
      context_->set_sequence(T, docs);
      const int64_t slice = T / control_mesh_.context_size(), first = context_->position();
      micro_batch = {micro_batch.ids + first, micro_batch.targets + first, 1, slice, {}, &*context_};
    }
    LossSums sums = model_.forward_backward(weights, sink, micro_batch, float(config_.z_loss), grad_scale);
    sums.ce *= rank_weight;
    sums.z *= rank_weight;
    return sums;
  });
}

StepResult TrainStep::update(const LossSums& sums, int64_t step) {
  StepResult result;
  result.ce = sums.ce / loss_denominator_;
  result.z_loss = config_.z_loss * sums.z / loss_denominator_;
  result.grad_norm = dp_.clip(config_.clip);
  const std::optional<double> watched_norm = config_.clip > 0 ? std::optional(result.grad_norm) : std::nullopt;
  result.skipped = config_.skip_step.enabled && !skip_step_.record(result.ce, watched_norm);
  result.lr = optim::learning_rate(config_.schedule, step);
  // A non-finite loss or gradient would make every weight NaN from here on; stop before the update instead, so the
  // weights (and every checkpoint the run has written) stay those of the last finite step.
  check(result.skipped || (std::isfinite(result.loss()) && std::isfinite(result.grad_norm)),
        "step {}: the loss is {} and the gradient norm {}; stopping before the update, so the newest checkpoint is "
        "the last finite state of the run (resume from it with a lower optim.lr, or with optim.skip_step)",
        step, result.loss(), result.grad_norm);
  if (!result.skipped) dp_.step(*optimizer_, result.lr);
  return result;
}

}  // namespace replica::train
