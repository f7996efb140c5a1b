// AdamW over the flat parameter buffer with OLMo-core's SkipStepAdamW math (olmo_core/optim/adamw.py,
// foreach_adamw_step), the default Optimizer (optim/optimizer.h, optim.name=adamw): decoupled weight decay on every
// tensor except the embedding, fp32 moments (state exp_avg, exp_avg_sq). The moments live in the backend's memory, or
// with `host_moments` in its page-locked host memory (streamed through the device for each update); the element update
// is the backend's (kernels/cpu/adamw.cc).
#pragma once
#include <cstdint>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/params.h"
#include "replica/optim/optimizer.h"

namespace replica::optim {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  // optim.host_moments: where the moments live, not what they are (the same bits either way). Off the GPU they free
  // 8 bytes per parameter of its memory for activations (the 7B on one GPU without block recomputation).
  bool host_moments = false;
};

class AdamW final : public Optimizer {
 public:
  // Updates `parts` of the flat buffer (a data-parallel shard, ShardLayout::parts_of: disjoint, in flat order), whose
  // weights, gradient and moments are stored one part after the other.
  AdamW(const model::ParamTable& table, AdamWConfig config, std::vector<Part> parts, Backend& backend);
  // All of the flat buffer.
  AdamW(const model::ParamTable& table, AdamWConfig config, Backend& backend)
      : AdamW(table, config, {{0, table.total(), 0}}, backend) {}

  // Optimizer::step. The step counter t advances first, so the first update uses bias corrections 1 - β^1. Padding
  // between tensors is left untouched. A skipped step changes no weight, moment or step count, as with OLMo-core's
  // step_factor = 0.
  void step(float* params, const float* grads, double lr, bool whole_params = false, float grad_scale = 1.0f) override;
  size_t size() const override { return exp_avg_.size(); }
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void state_to_host(size_t i, float* host) const override;
  void state_from_host(size_t i, const float* host) override;

  const AdamWConfig& config() const { return config_; }
  Backend& backend() const { return be_; }

  // Optimizer state of the shard in backend memory (host memory with host_moments), the parts one after the other.
  float* exp_avg() const { return exp_avg_.data(); }
  float* exp_avg_sq() const { return exp_avg_sq_.data(); }

 private:
  struct PartChunks {
    Part part;
    size_t first, count;  // its chunks in chunks_
  };
  AdamWConfig config_;
  Backend& be_;
  std::vector<PartChunks> parts_;
  BackendArray<float> exp_avg_, exp_avg_sq_;  // in backend memory, or with host_moments in its host memory
  std::vector<AdamWChunk> host_chunks_;       // fixed work units, each inside one tensor,
  DeviceArray<AdamWChunk> chunks_;            // and their copy in backend memory
};

}  // namespace replica::optim
