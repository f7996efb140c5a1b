// Smoothing and interpolation of a metric's series.
#include "replica/report/series.h"

#include <algorithm>
#include <limits>

#include "replica/core/error.h"

namespace replica::report {

std::map<std::string, Series> SeriesBuilder::build() const {
  std::map<std::string, Series> out;
  for (const auto& [name, points] : points_) {
    Series& series = out[name];
    for (const auto& [step, value] : points) series.push_back({step, value});
  }
  return out;
}

void check_window(int64_t window) {
  check(window >= 1 && window % 2 == 1, "smoothing window {} steps: expected an odd number of steps ≥ 1", window);
}

Series smooth_centred(const Series& series, int64_t window) {
  check_window(window);
  const int64_t half = window / 2;
  Series out;
  out.reserve(series.size());
  // Two pointers bound the points within ±half of the current step; each window is summed afresh, as a running sum
  // would carry the rounding of points long out of the window.
  size_t lo = 0, hi = 0;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  for (const Point& p : series) {
    // The window's ends saturate at the int64 range rather than wrap (a step near 2^63).
    const int64_t first = p.step < kMin + half ? kMin : p.step - half;
    const int64_t last = p.step > kMax - half ? kMax : p.step + half;
    while (series[lo].step < first) lo++;
    while (hi < series.size() && series[hi].step <= last) hi++;
    double sum = 0.0;
    for (size_t i = lo; i < hi; i++) sum += series[i].value;
    out.push_back({p.step, sum / double(hi - lo)});
  }
  return out;
}

double value_at(const Series& series, int64_t step) {
  check(!series.empty() && step >= series.front().step && step <= series.back().step,
        "value_at: step {} outside the series", step);
  const auto after =
      std::lower_bound(series.begin(), series.end(), step, [](const Point& p, int64_t s) { return p.step < s; });
  if (after->step == step) return after->value;
  const Point& b = *after;
  const Point& a = *(after - 1);
  const double t = double(step - a.step) / double(b.step - a.step);
  return a.value + t * (b.value - a.value);
}

}  // namespace replica::report
