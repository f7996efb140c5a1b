// The per-rank plan: memory items from distributed/memory_plan, the fit search over remat and weight sharding, FLOPs over
// time.
#include "replica/train/rank_plan.h"

#include <cmath>

#include "replica/core/error.h"
#include "replica/core/parse_number.h"
#include "replica/model/flops.h"
#include "replica/optim/optimizers.h"
#include "replica/train/step.h"

namespace replica::train {

std::vector<distributed::MemoryItem> rank_memory(const model::ModelConfig& model, const StepConfig& step, int64_t ranks) {
  const double activations = double(step_activation_bytes(model, step));
  const distributed::OptimizerStateMemory optimizer{optim::state_names(step.optimizer),
                                                    optim::state_in_host_memory(step.optimizer)};
  std::vector<distributed::MemoryItem> items = distributed::data_parallel_memory(
      model, ranks, activations, step.precision, step.sharding.weights, optimizer);
  if (step.context.degree > 1)
    items.push_back(distributed::context_parallel_memory(model, step.seq_len, step.context.degree, step.context.head_stride));
  return items;
}

double parse_memory_size(const std::string& text, const std::string& what) {
  std::string number = text;
  double unit = 1e9;  // GB
  auto strip = [&](const std::string& suffix, double bytes) {
    if (number.size() <= suffix.size() || number.compare(number.size() - suffix.size(), suffix.size(), suffix) != 0)
      return false;
    number.resize(number.size() - suffix.size());
    while (!number.empty() && number.back() == ' ') number.pop_back();
    unit = bytes;
    return true;
  };
  if (!strip("GiB", double(1 << 30))) strip("GB", 1e9);
  const std::optional<double> value = parse_double(number);
  check(value && std::isfinite(*value) && *value > 0,
        "{}: expected a GPU's memory such as 80GB (10^9 bytes) or 74.5GiB (2^30 bytes), got '{}'", what, text);
  return *value * unit;
}

std::optional<StepConfig> nearest_layout_that_fits(const model::ModelConfig& model, const StepConfig& step,
                                                   int64_t ranks, double capacity) {
  using model::Remat;
  for (Remat remat : {Remat::none, Remat::selective, Remat::keep_attention, Remat::block})
    for (bool shard_weights : {false, true}) {
      StepConfig layout = step;
      layout.remat = remat;
      layout.sharding.weights = shard_weights;
      if (distributed::total_bytes(rank_memory(model, layout, ranks)) <= capacity) return layout;
    }
  return std::nullopt;
}

double step_flops(const model::ModelConfig& model, const StepConfig& step) {
  return model::training_flops_per_token(model, step.seq_len) * double(step.global_batch) * double(step.seq_len);
}

double step_seconds(const model::ModelConfig& model, const StepConfig& step, int64_t ranks, double mfu,
                    double peak_flops) {
  return step_flops(model, step) / (double(ranks) * mfu * peak_flops);
}

}  // namespace replica::train
