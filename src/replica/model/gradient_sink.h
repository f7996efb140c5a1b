// Where the backward pass puts one micro-batch's gradient. The model asks for each group's memory (the ranges of
// ParamTable) before it adds the group's first gradient, and hands the group back as soon as its gradient is
// complete. A data-parallel trainer reduces that group right away and reuses the memory for the next one, so a
// micro-batch needs the memory of one group's gradient, not of the whole buffer's (distributed/data_parallel.h).
#pragma once
#include "replica/model/params.h"

namespace replica::model {

class GradientSink {
 public:
  virtual ~GradientSink() = default;
  // Backend memory for the gradient of the parameters in `range`: the gradient of the parameter at flat offset i
  // is added to result[i - range.begin].
  virtual float* open(ParamTable::Range range) = 0;
  // The group's gradient is complete; the backward no longer touches its memory.
  virtual void close(ParamTable::Range range) = 0;
};

// The whole gradient buffer (table.total() floats): every gradient is added to it in place.
class WholeGradient final : public GradientSink {
 public:
  explicit WholeGradient(float* grads) : grads_(grads) {}
  float* open(ParamTable::Range range) override { return grads_ + range.begin; }
  void close(ParamTable::Range) override {}

 private:
  float* grads_;
};

}  // namespace replica::model
