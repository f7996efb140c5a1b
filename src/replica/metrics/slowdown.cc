#include "replica/metrics/slowdown.h"

#include <fmt/core.h>

namespace replica::metrics {

std::optional<std::string> SlowdownWatch::observe(int64_t step, double tokens_per_s, const CpuTimes& now) {
  const std::optional<CpuTimes> before = last_;
  last_ = now;
  if (++seen_ <= kWarmupSteps) return std::nullopt;
  if (tokens_per_s >= 0.75 * best_) slow_ = false;
  if (tokens_per_s > best_) best_ = tokens_per_s;
  if (slow_ || tokens_per_s >= 0.5 * best_) return std::nullopt;
  slow_ = true;
  std::string note = fmt::format("step {} ran at {:.0f} tokens/s, under half of this run's best {:.0f}", step,
                                 tokens_per_s, best_);
  if (!before || now.cores == 0) return note;
  const double elsewhere = cores_busy_elsewhere(*before, now);
  if (elsewhere >= 0.5)
    return note + fmt::format(": other work kept {:.1f} of the {} cores busy during it (fewer train.threads run "
                              "steadier on a shared machine)",
                              elsewhere, now.cores);
  return note + fmt::format(": other work used {:.1f} of the {} cores during it", elsewhere, now.cores);
}

}  // namespace replica::metrics
