// Where the model reads its weights. The forward and backward passes acquire each group's weights (the ranges of
// ParamTable) just before they use them and release them right after, so a fully sharded data-parallel trainer can
// gather one group at a time (dist/data_parallel.h) while a single process simply points into its whole buffer.
#pragma once
#include "replica/kernels/backend.h"
#include "replica/model/params.h"

namespace replica {

// One group's weights in backend memory: the parameter at flat offset i is f32[i - begin]; in bf16 precision b16 holds
// the same values rounded (RNE) to bf16 for the GEMMs, otherwise it is null.
struct GroupWeights {
  const float* f32 = nullptr;
  const bf16* b16 = nullptr;
  size_t begin = 0;
  const float* operator()(size_t offset) const { return f32 + (offset - begin); }
  WeightRef matrix(size_t offset) const { return {(*this)(offset), b16 ? b16 + (offset - begin) : nullptr}; }
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // The weights of `range` until release(range); with precision bf16 also their bf16 copy.
  virtual GroupWeights acquire(ParamTable::Range range, Precision precision) = 0;
  virtual void release(ParamTable::Range range) = 0;
};

// The whole flat buffer (table.total() floats of backend memory). Its bf16 copy is rounded at the first acquire in bf16
// after set(), once for all groups.
class WholeWeights final : public WeightSource {
 public:
  WholeWeights(Backend& backend, size_t total) : be_(backend), total_(total) {}
  // New weights (or the same buffer after an update): the bf16 copy is stale.
  void set(const float* params) {
    params_ = params;
    rounded_ = false;
  }

  GroupWeights acquire(ParamTable::Range range, Precision precision) override;
  void release(ParamTable::Range) override {}

 private:
  Backend& be_;
  size_t total_;
  const float* params_ = nullptr;
  DeviceArray<bf16> params16_;
  bool rounded_ = false;
};

}  // namespace replica
