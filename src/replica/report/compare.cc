// Bitwise comparison and curve distance of two runs.
#include "replica/report/compare.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

namespace replica::report {
namespace {

std::optional<double> exact_value_at(const Series& s, int64_t step) {
  const auto it = std::lower_bound(s.begin(), s.end(), step, [](const Point& p, int64_t x) { return p.step < x; });
  if (it == s.end() || it->step != step) return std::nullopt;
  return it->value;
}

bool same_bits(const std::optional<double>& a, const std::optional<double>& b) {
  return a && b && std::bit_cast<uint64_t>(*a) == std::bit_cast<uint64_t>(*b);
}

// The curve both runs are compared on.
const char* distance_metric(const RunHistory& a, const RunHistory& b) {
  for (const char* metric : {"loss", "ce"})
    if (!a.train_series(metric).empty() && !b.train_series(metric).empty()) return metric;
  return nullptr;
}

// The steps both series logged, ascending (each lies within both series' ranges by construction).
std::vector<int64_t> common_steps(const Series& a, const Series& b) {
  std::vector<int64_t> steps;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i].step < b[j].step) {
      i++;
    } else if (b[j].step < a[i].step) {
      j++;
    } else {
      steps.push_back(a[i].step);
      i++, j++;
    }
  }
  return steps;
}

}  // namespace

std::optional<ExactComparison> compare_exact(const RunHistory& a, const RunHistory& b) {
  const char* curve = distance_metric(a, b);
  if (curve == nullptr) return std::nullopt;
  const Series& la = a.train_series(curve);
  const Series& lb = b.train_series(curve);
  ExactComparison out{.first_step = std::max(la.front().step, lb.front().step),
                      .last_step = std::min(la.back().step, lb.back().step)};
  if (out.first_step > out.last_step) return std::nullopt;
  const std::vector<int64_t> steps = common_steps(la, lb);
  out.common_steps = int64_t(steps.size());
  if (steps.empty()) return std::nullopt;
  std::vector<const char*> metrics;
  for (const char* m : kExactMetrics)
    if (!a.train_series(m).empty() && !b.train_series(m).empty()) metrics.push_back(m);
  for (int64_t step : steps) {
    for (const char* m : metrics) {
      const std::optional<double> va = exact_value_at(a.train_series(m), step);
      const std::optional<double> vb = exact_value_at(b.train_series(m), step);
      if (!va && !vb) continue;  // neither logged this metric at this step
      if (!same_bits(va, vb)) {
        out.difference = FirstDifference{.step = step, .metric = m, .a = va, .b = vb};
        return out;
      }
    }
    out.identical_steps++;
  }
  return out;
}

std::optional<CurveDistance> curve_distance(const Series& a, const Series& b, int64_t window) {
  if (a.empty() || b.empty()) return std::nullopt;
  CurveDistance d{.window = window,
                  .first_step = std::max(a.front().step, b.front().step),
                  .last_step = std::min(a.back().step, b.back().step)};
  if (d.first_step > d.last_step) return std::nullopt;
  const std::vector<int64_t> steps = common_steps(a, b);
  d.grid = steps.empty() ? CurveGrid::interpolated : CurveGrid::common_steps;
  // With common steps both curves are smoothed over exactly those, so a sparse or longer curve averages what the
  // other does; without, each is smoothed whole and b interpolated at a's steps.
  auto smoothed = [&](const Series& s) {
    if (steps.empty()) return smooth_centred(s, window);
    Series on_grid;
    for (const Point& p : s)
      if (std::binary_search(steps.begin(), steps.end(), p.step)) on_grid.push_back(p);
    return smooth_centred(on_grid, window);
  };
  const Series sa = smoothed(a), sb = smoothed(b);
  double sum = 0.0;
  for (const Point& p : sa) {
    if (p.step < d.first_step || p.step > d.last_step) continue;
    const double delta = std::fabs(p.value - value_at(sb, p.step));
    if (d.points == 0 || delta > d.max_abs) {
      d.max_abs = delta;
      d.max_step = p.step;
    }
    sum += delta;
    d.points++;
  }
  if (d.points == 0) return std::nullopt;
  d.mean_abs = sum / double(d.points);
  return d;
}

std::optional<CurveDistance> curve_distance(const RunHistory& a, const RunHistory& b, int64_t window) {
  const char* metric = distance_metric(a, b);
  if (metric == nullptr) return std::nullopt;
  std::optional<CurveDistance> d = curve_distance(a.train_series(metric), b.train_series(metric), window);
  if (d) d->metric = metric;
  return d;
}

}  // namespace replica::report
