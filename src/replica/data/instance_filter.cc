// Repeated n-gram detection in O(n * periods).
#include "replica/data/instance_filter.h"

#include <algorithm>

namespace replica::data {

bool instance_passes(const int32_t* tokens, size_t n, const InstanceFilterConfig& config) {
  if (!config.enabled) return true;
  size_t max_period = std::min<size_t>(size_t(config.max_period), n / 3);
  for (size_t p = size_t(std::max(config.min_period, 1)); p <= max_period; p++) {
    size_t run = 0;
    for (size_t i = p; i <= n; i++) {
      if (i < n && tokens[i] == tokens[i - p]) {
        run++;
        continue;
      }
      size_t times = (run + p) / p;
      if (run > 0 && times >= 3 && times >= size_t(config.max_count)) return false;
      run = 0;
    }
  }
  return true;
}

}  // namespace replica::data
