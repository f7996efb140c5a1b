// How two runs compare: the first step where their training metrics differ bitwise, and the distance between their
// smoothed loss curves (max and mean |Δ| over the steps both cover) with a verdict against a threshold.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "replica/report/run_history.h"

namespace replica::report {

// The metrics compared bitwise, in the order they are checked at each step.
inline const char* const kExactMetrics[] = {"loss", "ce", "z_loss", "lr", "grad_norm", "skipped"};

struct FirstDifference {
  int64_t step = 0;
  std::string metric = "";               // the first of kExactMetrics that differs there
  std::optional<double> a = {}, b = {};  // each run's value; none where that run has no point at the step
};

struct ExactComparison {
  int64_t first_step = 0, last_step = 0;  // the steps both runs cover
  int64_t identical_steps = 0;            // steps compared equal before the difference (or all of them)
  std::optional<FirstDifference> difference = std::nullopt;
};

// Over the steps both runs' loss curves cover, every metric of kExactMetrics that both runs record, compared as the
// bits of the double (metrics.jsonl prints each double in its shortest round-trip form, so this is the same as
// comparing the printed numbers). A step that one run logged and the other did not is a difference. None when
// the runs share no step or no metric.
std::optional<ExactComparison> compare_exact(const RunHistory& a, const RunHistory& b);

struct CurveDistance {
  std::string metric = "";  // "loss" when both runs record it, else "ce"
  int64_t window = 0;       // of the centred moving average, in steps
  int64_t first_step = 0, last_step = 0;
  int64_t points = 0;  // steps of `a` at which |Δ| was taken
  double max_abs = 0.0, mean_abs = 0.0;
  int64_t max_step = 0;  // where |Δ| is largest (the first such step)
};

// Both series smoothed with smooth_centred(window), then |Δ| at each step of `a` within [b.front, b.back], with b's
// smoothed curve interpolated linearly where b has no point of its own. None when they do not overlap.
std::optional<CurveDistance> curve_distance(const Series& a, const Series& b, int64_t window);
// The same on the runs' loss (or CE) curves.
std::optional<CurveDistance> curve_distance(const RunHistory& a, const RunHistory& b, int64_t window);

// The verdict: the curves agree when the largest |Δ| is within the threshold (nat).
inline bool within(const CurveDistance& d, double threshold) { return d.max_abs <= threshold; }

}  // namespace replica::report
