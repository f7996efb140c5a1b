// WholeWeights: pointers into the whole buffer, with its bf16 copy rounded once per version of the weights, group by
// group as groups are first acquired in bf16.
#include "replica/model/weight_source.h"

#include <algorithm>

#include "replica/core/error.h"

namespace replica::model {

GroupWeights WholeWeights::acquire(ParamTable::Range range, Precision precision) {
  check(params_ != nullptr, "WholeWeights: no weights set");
  if (precision != Precision::bf16) return {params_ + range.begin, nullptr, range.begin};
  const Stamp now{params_, version_, version_->value()};
  if (rounded_ != now) {
    rounded_ranges_.clear();
    rounded_ = now;
  }
  if (params16_.size() != total_) params16_ = DeviceArray<bf16>(be_, total_);
  if (std::find(rounded_ranges_.begin(), rounded_ranges_.end(), range) == rounded_ranges_.end()) {
    be_.convert_to_bf16(params_ + range.begin, params16_.data() + range.begin, range.end - range.begin);
    rounded_ranges_.push_back(range);
  }
  return {params_ + range.begin, params16_.data() + range.begin, range.begin};
}

}  // namespace replica::model
