// A metric over optimizer steps, and the two operations the report applies to one: the centred moving average it
// smooths with, and linear interpolation between logged steps (a reference logged every N steps).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace replica::report {

struct Point {
  int64_t step = 0;
  double value = 0.0;
};

// Points in ascending step order, at most one per step.
using Series = std::vector<Point>;

// Collects named series from records read in any order; a later point for a step replaces an earlier one, as the
// later line of a log is the one the run continued from.
class SeriesBuilder {
 public:
  void add(const std::string& name, int64_t step, double value) { points_[name][step] = value; }
  std::map<std::string, Series> build() const;

 private:
  std::map<std::string, std::map<int64_t, double>> points_;
};

// Centred moving average over `window` steps (odd; 1 leaves the series as it is): each point becomes the mean of
// the points whose step lies within ±window/2 steps of its own. Near either end the window holds fewer points — it
// is truncated, never padded — so the smoothed curve starts and ends where the raw one does.
Series smooth_centred(const Series& series, int64_t window);
// Raises replica::Error unless `window` is an odd number of steps ≥ 1.
void check_window(int64_t window);

// The value at `step`, interpolated linearly between the two nearest points; `step` must lie within
// [front().step, back().step].
double value_at(const Series& series, int64_t step);

}  // namespace replica::report
