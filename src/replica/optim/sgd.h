// SGD, with or without momentum: torch.optim.SGD (dampening 0, not Nesterov, no weight decay) over the flat
// parameter buffer. The second optimizer behind optim/optimizer.h (optim.name=sgd), small enough to show that
// checkpoints, resumes, resharding and the memory plan take an optimizer's state by name: with momentum it keeps
// one state tensor, "momentum_buffer" (torch's name), and without none. The element updates are the backend's
// scale/add/copy, so it runs on every backend; optim.weight_decay, betas, eps and host_moments are AdamW's.
#pragma once
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/params.h"
#include "replica/optim/optimizer.h"

namespace replica::optim {

struct SgdConfig {
  double momentum = 0.0;  // optim.momentum: 0 keeps no state
};

class Sgd final : public Optimizer {
 public:
  // Updates `parts` of the flat buffer (ShardLayout::parts_of: disjoint, in flat order, stored one after the other).
  Sgd(const model::ParamTable& table, SgdConfig config, std::vector<Part> parts, Backend& backend);
  Sgd(const model::ParamTable& table, SgdConfig config, Backend& backend)
      : Sgd(table, config, {{0, table.total(), 0}}, backend) {}

  // buf ← momentum · buf + g (buf = g at the first step, as torch), then p ← p + (−lr) · buf, each product and sum
  // rounded to fp32; without momentum p ← p + (−lr) · g. g is grads · grad_scale, rounded. Padding between tensors is
  // left untouched.
  void step(float* params, const float* grads, double lr, bool whole_params = false, float grad_scale = 1.0f) override;
  size_t size() const override { return size_; }
  std::vector<std::string> state_names() const override;
  void state_to_host(size_t i, float* host) const override;
  void state_from_host(size_t i, const float* host) override;

  const float* momentum_buffer() const { return buffer_.data(); }  // null without momentum

 private:
  SgdConfig config_;
  Backend& be_;
  struct Run {
    size_t begin, end, offset;  // one tensor's floats inside one part: flat range, and where it is in the shard
  };
  std::vector<Run> runs_;  // in flat order
  size_t size_ = 0;
  DeviceArray<float> buffer_;   // momentum_buffer, the parts one after the other (empty without momentum)
  DeviceArray<float> scratch_;  // −lr times a piece of the direction, added to the weights
};

}  // namespace replica::optim
