// One optimizer step on a global batch, the training step's one home (OLMo-core's TrainModule): the model, its
// data-parallel state, the optimizer, the skip-step rule, the schedule and the loss settings. The trainer's loop,
// bench_model, dist-selftest and the data-parallel tests all step through it.
//
//   TrainStep step(model_config, step_config(recipe), control, data, backend);   // train/recipe.h
//   data::Batch batch = loader.batch(epoch, b, step.data_rank(), step.data_ranks(), micro_batch);
//   StepResult result = step.run(batch, s);                               // s = 1, 2, ...: the schedule's step
#pragma once
#include <cstdint>
#include <memory>
#include <optional>

#include "replica/data/loader.h"
#include "replica/distributed/context_parallel.h"
#include "replica/distributed/data_parallel.h"
#include "replica/distributed/mesh.h"
#include "replica/model/transformer.h"
#include "replica/optim/skip_step.h"
#include "replica/train/step_config.h"

namespace replica::train {

// The labels of `batch`, [rows, seq_len], before the instance filter (OLMo-core's get_labels): each row's ids shifted
// left, the last position without one. In packed rows (doc_lens) the positions whose next token is padding (the
// row's last document when it is all data::kDolma2Pad) have none either, while the EOS that ends a document keeps
// the next document's first token (stage3.md §3.4).
std::vector<int32_t> step_targets(const data::Batch& batch);

// The activation memory each rank's model allocates for one micro-batch of the step `config` describes: its slice of
// each sequence under context parallelism, its remat policy, precision and float8 (the memory plan, `replica plan`).
size_t step_activation_bytes(const model::ModelConfig& model, const StepConfig& config);

// What one step did. Losses are global-batch means over the labels the batch has without the instance filter.
struct StepResult {
  double ce = 0, z_loss = 0;  // z_loss: coefficient × mean logsumexp²
  double loss() const { return ce + z_loss; }
  double grad_norm = 0;  // before clipping
  double lr = 0;         // of this step (also when it was skipped)
  bool skipped = false;  // the skip-step rule kept the weights
};

class TrainStep {
 public:
  // Raises replica::Error unless micro_batch × data-parallel ranks divides global_batch and the context-parallel
  // degree divides the ranks. The weights are zero until
  // dp().load_weights (train/rank_sync.h's start_run_all_ranks, or the caller's own init).
  TrainStep(const model::ModelConfig& model, const StepConfig& config, distributed::Communicator& control,
            distributed::Communicator& data, Backend& backend);

  // Optimizer step `step` (1-based, the schedule's s) on `batch`: gradients(batch), then update(its sums, step).
  StepResult run(const data::Batch& batch, int64_t step);

  // The two halves of a step (OLMo-core's train_batch and optim_step), public for benchmarks. gradients: `batch` is
  // this data-parallel rank's G / W rows in micro-batch order (DataLoader::batch with the micro-batch size, W the
  // data-parallel ranks; under context parallelism each rank of a group takes its slice of every row); targets are
  // step_targets, instances the filter masks keep no labels, packed rows' attention keeps their documents apart, and
  // the loss is OLMo-core's (unpacked: the mean over G (T - 1) labels, the labels without the filter; step.cc);
  // returns the loss sums over every rank's micro-batches. update (after gradients, whose label count it divides
  // by): the clip, the skip-step rule and the optimizer with the scheduled LR.
  LossSums gradients(const data::Batch& batch);
  StepResult update(const LossSums& sums, int64_t step);

  const StepConfig& config() const { return config_; }
  // Where this rank reads its rows: the data-parallel ranks (the world's ranks without context parallelism).
  int data_rank() const { return control_mesh_.data_rank(); }
  int data_ranks() const { return control_mesh_.data_size(); }
  model::Transformer& model() { return model_; }
  const model::ParamTable& table() const { return model_.table(); }
  distributed::DataParallel& dp() { return dp_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  optim::SkipStep& skip_step() { return skip_step_; }
  // The weights the model reads, in a step or for an evaluation between steps.
  model::WeightSource& weights();

 private:
  StepConfig config_;
  distributed::Mesh control_mesh_, data_mesh_;  // the mesh over the control and over the data communicator
  std::optional<distributed::ContextParallel> context_;  // with context parallelism: this rank's slice's attention
  model::Transformer model_;
  distributed::DataParallel dp_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  optim::SkipStep skip_step_;
  std::vector<int32_t> targets_;
  std::vector<std::vector<int32_t>> doc_offsets_;  // per local micro-batch (model/document_offsets.h); empty unpacked
  double loss_denominator_ = 0;                    // the last gradients()' labels over every rank (step.cc)
};

}  // namespace replica::train
