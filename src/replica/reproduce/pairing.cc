// Pairing two checkpoint series by step or by tokens seen.
#include "replica/reproduce/pairing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "replica/core/error.h"

namespace replica::reproduce {

namespace {

bool all_tokens_known(const CheckpointSeries& s) {
  return std::all_of(s.checkpoints.begin(), s.checkpoints.end(), [](const SeriesCheckpoint& c) { return bool(c.tokens); });
}

// Tokens per step of the series' last checkpoint past step 0, or none (unknown tokens, or only step 0).
std::optional<double> tokens_per_step(const CheckpointSeries& s) {
  for (auto it = s.checkpoints.rbegin(); it != s.checkpoints.rend(); ++it)
    if (it->step > 0 && it->tokens) return double(it->tokens->value) / double(it->step);
  return std::nullopt;
}

bool same_tokens(const TokensSeen& a, const TokensSeen& b) {
  const int64_t tolerance = std::max(a.resolution, b.resolution);
  return std::llabs(a.value - b.value) <= tolerance / 2;
}

}  // namespace

PairBy parse_pair_by(const std::string& text) {
  if (text == "auto") return PairBy::automatic;
  if (text == "step") return PairBy::step;
  if (text == "tokens") return PairBy::tokens;
  fail("--pair-by: expected auto, step or tokens, got '{}'", text);
}

Pairing pair_series(const CheckpointSeries& reference, const CheckpointSeries& candidate, PairBy by,
                    const std::vector<int64_t>& steps) {
  const bool known = all_tokens_known(reference) && all_tokens_known(candidate);
  const std::optional<double> ref_rate = tokens_per_step(reference), cand_rate = tokens_per_step(candidate);
  Pairing p;
  if (by == PairBy::tokens) {
    check(known, "--pair-by tokens: the tokens seen are unknown for some checkpoint of {} or {} (name HF directories "
                 "…-tokens<N>B, or give the CSV a Tokens column)", reference.source, candidate.source);
    p.by = PairBy::tokens;
    p.rule = "by tokens seen (--pair-by tokens)";
  } else if (by == PairBy::step) {
    p.by = PairBy::step;
    p.rule = "by step (--pair-by step)";
  } else if (known && ref_rate && cand_rate && *ref_rate != *cand_rate) {
    p.by = PairBy::tokens;
    p.rule = fmt::format("by tokens seen: the runs see different tokens per step (reference {:.0f}, candidate {:.0f})",
                         *ref_rate, *cand_rate);
  } else {
    p.by = PairBy::step;
    p.rule = known && ref_rate ? fmt::format("by step: both runs see {:.0f} tokens per step", *ref_rate)
                               : "by step: the tokens seen are not known for both runs";
  }
  auto partner = [&](const SeriesCheckpoint& c) -> const SeriesCheckpoint* {
    for (const SeriesCheckpoint& r : reference.checkpoints)
      if (p.by == PairBy::step ? r.step == c.step : same_tokens(*r.tokens, *c.tokens)) return &r;
    return nullptr;
  };
  std::vector<const SeriesCheckpoint*> used;
  for (const SeriesCheckpoint& c : candidate.checkpoints) {
    if (!steps.empty() && std::find(steps.begin(), steps.end(), c.step) == steps.end()) continue;
    if (const SeriesCheckpoint* r = partner(c)) {
      p.pairs.push_back({*r, c});
      used.push_back(r);
    } else {
      p.candidate_only.push_back(c);
    }
  }
  if (steps.empty())
    for (const SeriesCheckpoint& r : reference.checkpoints)
      if (std::find(used.begin(), used.end(), &r) == used.end()) p.reference_only.push_back(r);
  return p;
}

}  // namespace replica::reproduce
