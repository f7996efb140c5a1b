// Smoothing and interpolation of a metric's series.
#include "replica/report/series.h"

#include <algorithm>
#include <limits>
#include <vector>

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

namespace {

// The sum of a sliding window without subtracting what leaves (the two-stack queue): points enter at the back, with a
// running sum; the front holds, for each of its points, the sum of it and the newer points of the front, rebuilt from
// the back when the front runs out. The window's sum is the front's oldest sum plus the back's: every term is a point
// of the window, so the rounding is that of one window summed afresh, and a value that has left (1e308 among ones)
// leaves no trace, as a running sum with subtraction would (inf − inf, or the low bits of 1e6 − 1e6).
class WindowSum {
 public:
  void push(double x) {
    back_.push_back(x);
    back_sum_ += x;
  }
  void pop_oldest() {
    if (front_.empty()) {
      for (double newer = 0.0; !back_.empty(); back_.pop_back()) front_.push_back(newer += back_.back());
      back_sum_ = 0.0;
    }
    front_.pop_back();
  }
  double sum() const { return (front_.empty() ? 0.0 : front_.back()) + back_sum_; }

 private:
  std::vector<double> front_;  // the oldest point's sum on top
  std::vector<double> back_;
  double back_sum_ = 0.0;
};

}  // namespace

Series smooth_centred(const Series& series, int64_t window) {
  check_window(window);
  const int64_t half = window / 2;
  Series out;
  out.reserve(series.size());
  // Two pointers bound the points within ±half of the current step and a WindowSum follows them: O(1) a point
  // (summing each window afresh made a 199,999-step window over as many points take 53 s).
  size_t lo = 0, hi = 0;
  WindowSum sum;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  for (const Point& p : series) {
    // The window's ends saturate at the int64 range rather than wrap (a step near 2^63).
    const int64_t first = p.step < kMin + half ? kMin : p.step - half;
    const int64_t last = p.step > kMax - half ? kMax : p.step + half;
    for (; series[lo].step < first; lo++) sum.pop_oldest();
    for (; hi < series.size() && series[hi].step <= last; hi++) sum.push(series[hi].value);
    out.push_back({p.step, sum.sum() / double(hi - lo)});
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
