// WholeWeights: pointers into the whole buffer, with its bf16 copy rounded once per version of the weights, group by
// group as groups are first acquired in bf16.
#include "replica/model/weight_source.h"

#include <algorithm>
#include <atomic>

#include "replica/core/error.h"

namespace replica::model {

// Generations are unique in the process, so that no two roundings, of any WholeWeights, share one.
static uint64_t next_generation() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

GroupWeights WholeWeights::acquire(ParamTable::Range range, Precision precision) {
  check(params_ != nullptr, "WholeWeights: no weights set");
  if (precision != Precision::bf16) return {params_ + range.begin, nullptr, range.begin};
  const Stamp now{params_, version_, version_->value()};
  if (rounded_ != now) {
    rounded_ranges_.clear();
    rounded_ = now;
  }
  if (params16_.size() != total_) params16_ = DeviceArray<bf16>(be_, total_);
  auto rounded = std::find_if(rounded_ranges_.begin(), rounded_ranges_.end(),
                              [&](const Rounded& r) { return r.range == range; });
  if (rounded == rounded_ranges_.end()) {
    be_.convert_to_bf16(params_ + range.begin, params16_.data() + range.begin, range.end - range.begin);
    rounded = rounded_ranges_.insert(rounded_ranges_.end(), {range, next_generation()});
  }
  return {params_ + range.begin, params16_.data() + range.begin, range.begin, rounded->generation};
}

}  // namespace replica::model
