// Notices a run that trains far below its own best rate, and says whether other work on the machine explains it: a
// shared machine slows a run down without an error, and a user reading "520 tokens/s" cannot tell busy cores from a
// slow recipe.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "replica/core/cpu_load.h"

namespace replica::metrics {

class SlowdownWatch {
 public:
  // A note when a step runs at under half the best rate the run has had (the first steps warm caches and are not
  // counted), and again only after the rate has come back to three quarters of it.
  std::optional<std::string> observe(int64_t step, double tokens_per_s) { return observe(step, tokens_per_s, cpu_times()); }
  std::optional<std::string> observe(int64_t step, double tokens_per_s, const CpuTimes& now);

 private:
  static constexpr int64_t kWarmupSteps = 2;
  int64_t seen_ = 0;
  double best_ = 0;
  bool slow_ = false;
  std::optional<CpuTimes> last_;
};

}  // namespace replica::metrics
