// The verdict rule (verdict.h).
#include "replica/reproduce/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace replica::reproduce {

std::optional<double> Bounds::of(BoundKind kind) const {
  switch (kind) {
    case BoundKind::loss: return loss;
    case BoundKind::bits_per_byte: return bits_per_byte;
    case BoundKind::task: return task;
    case BoundKind::needle: return needle;
    case BoundKind::none: break;
  }
  return std::nullopt;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::tracking: return "tracking";
    case Verdict::drifting: return "drifting";
    case Verdict::diverged: return "diverged";
  }
  return "?";
}

namespace {

PairVerdict bounds_verdict(const PairMeasure& m, const Bounds& bounds) {
  PairVerdict v;
  auto consider = [&](const std::string& name, double value, double bound) {
    const double use = bound > 0 ? value / bound : (value > 0 ? INFINITY : 0.0);
    if (use > v.bound_use || v.nearest.empty()) v.bound_use = use, v.nearest = name;
    if (value > bound) v.crossed.push_back({name, value, bound});
  };
  consider("kl_mean", m.parity.kl_mean(), bounds.kl);
  for (const SurfaceDelta& s : m.surfaces)
    if (const std::optional<double> bound = bounds.of(bound_kind(s.name))) consider(s.name, std::fabs(s.delta()), *bound);
  std::stable_sort(v.crossed.begin(), v.crossed.end(),
                   [](const Crossing& a, const Crossing& b) { return a.value / a.bound > b.value / b.bound; });
  v.verdict = v.crossed.empty() ? Verdict::tracking : Verdict::diverged;
  return v;
}

}  // namespace

std::optional<double> heldout_delta(const PairMeasure& m) {
  for (const SurfaceDelta& s : m.surfaces)
    if (s.name == "heldout/loss") return s.delta();
  return std::nullopt;
}

SeriesVerdict judge(const std::vector<PairMeasure>& pairs, const Bounds& bounds) {
  SeriesVerdict s;
  const size_t k = size_t(std::max<int64_t>(bounds.drift_window, 2));
  for (size_t i = 0; i < pairs.size(); i++) {
    PairVerdict v = bounds_verdict(pairs[i], bounds);
    if (v.verdict == Verdict::tracking && i + 1 >= k && v.bound_use >= bounds.drift_fraction) {
      std::vector<double> uses;  // the window's bound use, oldest first
      for (size_t j = i + 1 - k; j < i; j++) uses.push_back(s.pairs[j].bound_use);
      uses.push_back(v.bound_use);
      const bool rising = std::adjacent_find(uses.begin(), uses.end(), std::greater_equal<>()) == uses.end();
      if (rising) v.verdict = Verdict::drifting;
    }
    if (v.verdict == Verdict::diverged && !s.diverged_at) {
      s.diverged_at = pairs[i].step;
      const Crossing& c = v.crossed.front();
      s.first_crossed = c.name;
    }
    s.pairs.push_back(std::move(v));
    // The memorisation alarm over the window ending here.
    if (!s.memorisation_alarm && i + 1 >= k) {
      const size_t first = i + 1 - k;
      bool fires = pairs[first].train_loss && pairs[i].train_loss && *pairs[i].train_loss < *pairs[first].train_loss;
      for (size_t j = first; fires && j < i; j++) {
        const std::optional<double> a = heldout_delta(pairs[j]), b = heldout_delta(pairs[j + 1]);
        fires = a && b && *b > *a;
      }
      if (fires) s.memorisation_alarm = MemorisationAlarmAt{pairs[first].step, pairs[i].step};
    }
  }
  if (s.diverged_at)
    s.verdict = Verdict::diverged;
  else if (!s.pairs.empty())
    s.verdict = s.pairs.back().verdict;
  return s;
}

std::string SeriesVerdict::summary() const {
  if (!diverged_at) return verdict_name(verdict);
  for (const PairVerdict& p : pairs)
    if (p.verdict == Verdict::diverged)
      return fmt::format("diverged at step {} ({} {:.4g} > {:.4g})", *diverged_at, first_crossed,
                         p.crossed.front().value, p.crossed.front().bound);
  return "diverged";
}

}  // namespace replica::reproduce
