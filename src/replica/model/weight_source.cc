// WholeWeights: pointers into the whole buffer, with its bf16 copy rounded once per version of the weights.
#include "replica/model/weight_source.h"

#include "replica/core/error.h"

namespace replica::model {

GroupWeights WholeWeights::acquire(ParamTable::Range range, Precision precision) {
  check(params_ != nullptr, "WholeWeights: no weights set");
  if (precision != Precision::bf16) return {params_ + range.begin, nullptr, range.begin};
  const Stamp now{params_, version_, version_->value()};
  if (rounded_ != now) {
    if (params16_.size() != total_) params16_ = DeviceArray<bf16>(be_, total_);
    be_.convert_to_bf16(params_, params16_.data(), total_);
    rounded_ = now;
  }
  return {params_ + range.begin, params16_.data() + range.begin, range.begin};
}

}  // namespace replica::model
