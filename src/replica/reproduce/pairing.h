// Which reference checkpoint each candidate checkpoint is held against. By step when the two runs see the same
// tokens per step (or either side's tokens are unknown); by tokens seen when both sides know them and their tokens per
// step differ (a different global batch size), a pair then being two checkpoints whose token counts agree to the
// coarser side's resolution. A checkpoint with no partner is listed, never an error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/reproduce/checkpoint_series.h"

namespace replica::reproduce {

enum class PairBy { automatic, step, tokens };
PairBy parse_pair_by(const std::string& text);  // "auto", "step", "tokens"

struct CheckpointPair {
  SeriesCheckpoint reference, candidate;
};

struct Pairing {
  PairBy by = PairBy::step;  // step or tokens, as resolved
  std::string rule;          // the sentence printed and written to the JSON
  std::vector<CheckpointPair> pairs;              // ascending candidate step
  std::vector<SeriesCheckpoint> reference_only, candidate_only;
};

// `steps`: when not empty, only the candidate checkpoints at these steps are paired (the others are neither paired
// nor listed). replica::Error when `by` is tokens and a side's tokens are unknown.
Pairing pair_series(const CheckpointSeries& reference, const CheckpointSeries& candidate, PairBy by,
                    const std::vector<int64_t>& steps = {});

}  // namespace replica::reproduce
