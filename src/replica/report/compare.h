// How two runs compare: the first step where their training metrics differ bitwise, and the distance between their
// smoothed loss curves (max and mean |Δ| over the steps both logged) with a verdict against a threshold. Both are
// taken on the steps both runs logged, so a reference logged every 10th step (as OLMo 3's W&B runs are), a shorter
// run, or a run against its own values compares the runs, not their logging.
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
  int64_t first_step = 0, last_step = 0;  // the range both runs cover
  int64_t common_steps = 0;               // steps in it that both runs logged: the ones compared
  int64_t identical_steps = 0;            // steps compared equal before the difference (or all of them)
  std::optional<FirstDifference> difference = std::nullopt;
};

// At each step both runs' loss curves logged, every metric of kExactMetrics that both runs record, compared as the
// bits of the double (metrics.jsonl prints each double in its shortest round-trip form, so this is the same as
// comparing the printed numbers); a metric one run logged at such a step and the other did not is a difference.
// Steps only one run logged are not compared. None when the runs share no logged step or no metric.
std::optional<ExactComparison> compare_exact(const RunHistory& a, const RunHistory& b);

// The steps |Δ| is taken at.
enum class CurveGrid {
  common_steps,  // the steps both curves logged within their common range
  interpolated,  // none in common: a's steps in the range, b's smoothed curve interpolated linearly between its own
};

struct CurveDistance {
  std::string metric = "";  // "loss" when both runs record it, else "ce"
  int64_t window = 0;       // of the centred moving average, in steps
  int64_t first_step = 0, last_step = 0;
  CurveGrid grid = CurveGrid::common_steps;
  int64_t points = 0;  // steps at which |Δ| was taken
  double max_abs = 0.0, mean_abs = 0.0;
  int64_t max_step = 0;  // where |Δ| is largest (the first such step)
};

// Over the common range [max(fronts), min(backs)]: when the two share logged steps, both series are cut to those
// steps, smoothed with smooth_centred(window) and |Δ| taken at each (equal values give 0 however sparse); when they
// share none, both are cut to the range and smoothed, and |Δ| is taken at a's steps with b interpolated. None when
// the ranges do not overlap.
std::optional<CurveDistance> curve_distance(const Series& a, const Series& b, int64_t window);
// The same on the runs' loss (or CE) curves.
std::optional<CurveDistance> curve_distance(const RunHistory& a, const RunHistory& b, int64_t window);

// The verdict: the curves agree when the largest |Δ| is within the threshold (nat).
inline bool within(const CurveDistance& d, double threshold) { return d.max_abs <= threshold; }

}  // namespace replica::report
