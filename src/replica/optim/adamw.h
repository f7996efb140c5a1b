// AdamW over the flat parameter buffer with OLMo-core's SkipStepAdamW math (olmo_core/optim/adamw.py,
// foreach_adamw_step): decoupled weight decay on every tensor except the embedding, fp32 moments. The
// moments live in the backend's memory; the element update is the backend's (kernels/cpu/adamw.cc).
#pragma once
#include <cstdint>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/params.h"

namespace replica {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

class AdamW {
 public:
  // Updates the elements [begin, end) of the flat buffer (a data-parallel shard; by default all of it).
  AdamW(const ParamTable& table, AdamWConfig config, size_t begin = 0, size_t end = SIZE_MAX,
        Backend& backend = cpu_backend());

  // One update of the shard's weights `params` from its gradient `grads` (end - begin floats each, element i of the
  // flat buffer at [i - begin]; backend memory) with learning rate lr. The step counter t advances first, so the
  // first update uses bias corrections 1 - β^1. Padding between tensors is left untouched. A skipped step (skip-step
  // rule) simply does not call step(): no weight, moment or step count changes, as with OLMo-core's step_factor = 0.
  void step(float* params, const float* grads, double lr);

  const AdamWConfig& config() const { return config_; }
  Backend& backend() const { return be_; }
  size_t begin() const { return begin_; }
  size_t end() const { return end_; }

  // Optimizer state for [begin, end) in backend memory: element i of the flat buffer is exp_avg[i - begin].
  float* exp_avg() const { return exp_avg_.data(); }
  float* exp_avg_sq() const { return exp_avg_sq_.data(); }
  // Copies of the moments to or from host memory (end - begin floats each).
  void moments_to_host(float* exp_avg, float* exp_avg_sq) const;
  void moments_from_host(const float* exp_avg, const float* exp_avg_sq);
  int64_t step_count = 0;

 private:
  AdamWConfig config_;
  Backend& be_;
  size_t begin_, end_;
  DeviceArray<float> exp_avg_, exp_avg_sq_;
  DeviceArray<AdamWChunk> chunks_;  // fixed work units, each inside one tensor
};

}  // namespace replica
