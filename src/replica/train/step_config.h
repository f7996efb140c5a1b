// StepConfig: everything one optimizer step depends on besides the model's shape. The Recipe holds it by value and
// its keys point into it (train/recipe.cc); step_config(recipe) adds only what is derived (the schedule's horizons,
// the batch's shape from the loader). TrainStep, `replica plan` and bench_model are given this one struct.
#pragma once
#include <cstdint>

#include "replica/distributed/context_parallel.h"
#include "replica/distributed/data_parallel.h"
#include "replica/kernels/attention.h"
#include "replica/kernels/precision.h"
#include "replica/model/transformer.h"
#include "replica/optim/optimizers.h"
#include "replica/optim/schedule.h"
#include "replica/optim/skip_step.h"

namespace replica::train {

struct StepConfig {
  int64_t seq_len = 0;       // T (the recipe's data.seq_len, held by the loader)
  int64_t global_batch = 0;  // G instances per step, over all ranks (data.global_batch_size, held by the loader)
  int64_t micro_batch = 1;   // M instances per forward/backward (data.micro_batch_size)
  Precision precision = Precision::fp32;
  model::Remat remat = model::Remat::none;
  bool float8 = false;  // train.float8 (Transformer::use_float8)
  // train.attention (Transformer::use_attention): auto is the backend's best measured kernel; the run records what
  // it resolved to, so that eval and generate of its checkpoints run the same one.
  AttentionKernel attention = AttentionKernel::automatic;
  distributed::Sharding sharding;
  distributed::ContextParallelConfig context;  // degree N: each instance split over N consecutive ranks
  optim::OptimizerConfig optimizer;  // optim.name and its settings
  optim::ScheduleConfig schedule;  // horizons in steps (0 in a recipe: resolved by step_config)
  optim::SkipStepConfig skip_step;
  double clip = 1.0;     // max global grad norm; 0 = no clipping
  double z_loss = 1e-5;  // coefficient of logsumexp² in the loss
};

}  // namespace replica::train
