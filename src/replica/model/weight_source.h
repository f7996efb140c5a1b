// Where the model reads its weights. The forward and backward passes acquire each group's weights (the ranges of
// ParamTable) just before they use them and release them right after, so a fully sharded data-parallel trainer can
// gather one group at a time (distributed/data_parallel.h) while a single process simply points into its whole buffer.
#pragma once
#include <cstdint>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/params.h"

namespace replica::model {

// One group's weights in backend memory: the parameter at flat offset i is f32[i - begin]; in bf16 precision b16 holds
// the same values rounded (RNE) to bf16 for the GEMMs, otherwise it is null.
struct GroupWeights {
  const float* f32 = nullptr;
  const bf16* b16 = nullptr;
  size_t begin = 0;
  uint64_t generation = 0;  // b16's values' (WeightRef::generation), 0 where the source does not track them
  const float* operator()(size_t offset) const { return f32 + (offset - begin); }
  WeightRef matrix(size_t offset) const {
    return b16 ? WeightRef((*this)(offset), b16 + (offset - begin), generation) : WeightRef((*this)(offset));
  }
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // The weights of `range` until release(range); with precision bf16 also their bf16 copy.
  virtual GroupWeights acquire(ParamTable::Range range, Precision precision) = 0;
  virtual void release(ParamTable::Range range) = 0;
};

// The version of a weight buffer: its owner bumps it whenever it changes the weights, so that what is derived from
// them (WholeWeights' bf16 copy) knows when it is stale.
class WeightsVersion {
 public:
  void bump() { value_++; }
  uint64_t value() const { return value_; }

 private:
  uint64_t value_ = 0;
};

// The whole flat buffer (table.total() floats of backend memory). Its bf16 copy is rounded group by group, at each
// group's first acquire in bf16 after the weights changed: a group only ever read in fp32 (an untied embedding's,
// whose lookup reads fp32 rows) is never rounded. Each rounding of a group gives it a new generation.
class WholeWeights final : public WeightSource {
 public:
  WholeWeights(Backend& backend, size_t total) : be_(backend), total_(total) {}
  WholeWeights(const WholeWeights&) = delete;  // set(params) points at its own version
  WholeWeights& operator=(const WholeWeights&) = delete;
  // `params` with the version its owner bumps on every change: the copy follows the version, so setting the same
  // weights again costs nothing and an update the owner has bumped cannot leave the copy stale.
  void set(const float* params, const WeightsVersion& version) {
    params_ = params;
    version_ = &version;
  }
  // Weights without a version: every call counts as a change, so call it again after changing them.
  void set(const float* params) {
    unversioned_.bump();
    set(params, unversioned_);
  }

  GroupWeights acquire(ParamTable::Range range, Precision precision) override;
  void release(ParamTable::Range) override {}

 private:
  // Which weights, at which version, the bf16 copy holds.
  struct Stamp {
    const float* params = nullptr;
    const WeightsVersion* version = nullptr;
    uint64_t value = 0;
    bool operator==(const Stamp&) const = default;
  };
  Backend& be_;
  size_t total_;
  const float* params_ = nullptr;
  const WeightsVersion* version_ = nullptr;
  WeightsVersion unversioned_;
  DeviceArray<bf16> params16_;
  Stamp rounded_;
  struct Rounded {
    ParamTable::Range range;
    uint64_t generation;
  };
  std::vector<Rounded> rounded_ranges_;  // the ranges params16_ holds at rounded_
};

}  // namespace replica::model
