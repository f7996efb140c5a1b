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
  // A range of the flat buffer this optimizer updates, and where it starts in the shard's arrays.
  struct Part {
    size_t begin, end, offset;
  };
  // Updates `parts` of the flat buffer (a data-parallel shard, ShardLayout::parts_of: disjoint, in flat order), whose
  // weights, gradient and moments are stored one part after the other.
  AdamW(const ParamTable& table, AdamWConfig config, std::vector<Part> parts, Backend& backend = cpu_backend());
  // All of the flat buffer.
  explicit AdamW(const ParamTable& table, AdamWConfig config = {}, Backend& backend = cpu_backend())
      : AdamW(table, config, {{0, table.total(), 0}}, backend) {}

  // One update of the shard's weights from its gradient `grads` (size() floats, the parts one after the other;
  // backend memory) with learning rate lr. `params` is the shard's weights stored the same way, or with
  // `whole_params` the whole flat buffer. The step counter t advances first, so the first update uses bias
  // corrections 1 - β^1. Padding between tensors is left untouched. A skipped step (skip-step rule) simply does not
  // call step(): no weight, moment or step count changes, as with OLMo-core's step_factor = 0.
  void step(float* params, const float* grads, double lr, bool whole_params = false);

  const AdamWConfig& config() const { return config_; }
  Backend& backend() const { return be_; }
  size_t size() const { return exp_avg_.size(); }  // floats of the shard

  // Optimizer state of the shard in backend memory, the parts one after the other.
  float* exp_avg() const { return exp_avg_.data(); }
  float* exp_avg_sq() const { return exp_avg_sq_.data(); }
  // Copies of the moments to or from host memory (size() floats each).
  void moments_to_host(float* exp_avg, float* exp_avg_sq) const;
  void moments_from_host(const float* exp_avg, const float* exp_avg_sq);
  int64_t step_count = 0;

 private:
  struct PartChunks {
    Part part;
    size_t first, count;  // its chunks in chunks_
  };
  AdamWConfig config_;
  Backend& be_;
  std::vector<PartChunks> parts_;
  DeviceArray<float> exp_avg_, exp_avg_sq_;
  DeviceArray<AdamWChunk> chunks_;  // fixed work units, each inside one tensor
};

}  // namespace replica
