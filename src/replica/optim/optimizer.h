// The optimizer seam: an Optimizer updates the weights of one data-parallel shard from the shard's summed gradient
// and holds its state for that shard. DataParallel (distributed/) keeps the shard layout and moves the memory; the
// optimizer only sees the shard's parts (ranges of the flat parameter buffer, stored one after the other). Its state
// is what state_names() lists and nothing else: checkpoints, the saver, the run start, the data-parallel gathers and
// loads, and the memory plan (through optim::state_names in optimizers.h) take it by those names, so an optimizer
// with other state (SGD's one tensor, or none) needs no change outside optim/ and the recipe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace replica::optim {

class Optimizer {
 public:
  // A range [begin, end) of the flat buffer the optimizer updates, and where it starts in the shard's arrays.
  struct Part {
    size_t begin, end, offset;
  };

  virtual ~Optimizer() = default;

  // One update of the shard's weights from its gradient `grads` (size() floats, the parts one after the other;
  // backend memory) times grad_scale (the clipping coefficient: each gradient multiplied as it is read, the bits of
  // scaling grads first) with learning rate lr. `params` is the shard's weights stored the same way, or with
  // `whole_params` the whole flat buffer. A skipped step (skip-step rule) simply does not call step().
  virtual void step(float* params, const float* grads, double lr, bool whole_params, float grad_scale) = 0;
  virtual size_t size() const = 0;  // floats of the shard

  // The state checkpoints store, each a size()-float array in shard order, by the name of its tensors
  // ("exp_avg" for AdamW's first moment: checkpoints hold `exp_avg.<parameter name>`); i indexes this list.
  virtual std::vector<std::string> state_names() const = 0;
  virtual void state_to_host(size_t i, float* host) const = 0;
  virtual void state_from_host(size_t i, const float* host) = 0;

  // Updates applied so far (skipped steps not counted): AdamW's bias corrections' t, saved with the state.
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t n) { step_count_ = n; }

 protected:
  int64_t step_count_ = 0;
};

}  // namespace replica::optim
