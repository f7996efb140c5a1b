// The verdict on a reproduction, pair by pair and for the series (docs/reproduce.md states the rule):
//   diverged   a pair's KL(reference ‖ candidate) mean, or the |Δ| of a surface, is above its bound; the series is
//              "diverged at step N" from the first such pair, naming what crossed (at that pair, the quantity furthest
//              over its bound, |value| / bound);
//   drifting   every pair within bounds, but over the last `drift_window` pairs the bound use (the largest
//              |value| / bound of a pair) rose at every pair and reached `drift_fraction` of a bound;
//   tracking   otherwise.
// Across the series, the memorisation alarm: over `drift_window` consecutive pairs the candidate's training loss
// fell while its held-out loss Δ against the reference rose at every pair.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replica/eval/parity.h"
#include "replica/reproduce/surface_values.h"

namespace replica::reproduce {

struct Bounds {
  double kl = 0.01;             // nats, mean KL(reference ‖ candidate) over the KL tokens
  double loss = 0.01;           // nats, |Δ| of held-out loss (overall and per file)
  double bits_per_byte = 0.01;  // |Δ| of bits per byte (macro and per domain)
  double task = 0.05;           // |Δ| of a task metric (accuracy: a fraction)
  double needle = 0.1;          // |Δ| of the needle's accuracy
  int64_t drift_window = 3;     // pairs
  double drift_fraction = 0.5;  // of a bound
  std::optional<double> of(BoundKind kind) const;  // none for BoundKind::none
};

struct SurfaceDelta {
  std::string name;
  double reference = 0.0, candidate = 0.0;
  double delta() const { return candidate - reference; }
};

// What was measured at one pair.
struct PairMeasure {
  int64_t step = 0, reference_step = 0;
  std::optional<int64_t> tokens;  // the candidate's tokens seen
  eval::ParityStats parity;
  std::vector<SurfaceDelta> surfaces;  // in name order
  std::optional<double> train_loss;    // the candidate's mean training loss since the previous pair, if logged
};
// A pair's held-out loss Δ (candidate − reference), where the suite has it.
std::optional<double> heldout_delta(const PairMeasure& m);

enum class Verdict { tracking, drifting, diverged };
const char* verdict_name(Verdict v);

struct Crossing {
  std::string name;  // "kl_mean" or a surface's name
  double value = 0.0, bound = 0.0;  // KL mean, or |Δ|
};

struct PairVerdict {
  Verdict verdict = Verdict::tracking;
  double bound_use = 0.0;          // the largest |value| / bound
  std::string nearest;             // what bound_use is of
  std::vector<Crossing> crossed;   // most over its bound first
};

struct MemorisationAlarmAt {
  int64_t from_step = 0, step = 0;
};

struct SeriesVerdict {
  Verdict verdict = Verdict::tracking;
  std::optional<int64_t> diverged_at;  // the candidate step of the first diverged pair
  std::string first_crossed;           // what crossed first there
  std::vector<PairVerdict> pairs;      // one per measure
  std::optional<MemorisationAlarmAt> memorisation_alarm;  // the first window it fired on
  std::string summary() const;         // "tracking", "diverged at step 8 (kl_mean 0.031 > 0.01)"
};

SeriesVerdict judge(const std::vector<PairMeasure>& pairs, const Bounds& bounds);

}  // namespace replica::reproduce
