// Sampler: greedy, or temperature → top-k → top-p → one seeded draw.
#include "replica/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "replica/core/error.h"
#include "replica/core/rng.h"

namespace replica::model {

void SamplingConfig::validate() const {
  check(std::isfinite(temperature) && temperature >= 0.0, "--temperature must be ≥ 0 (0 is greedy), got {}",
        temperature);
  check(top_k >= 0, "--top-k must be ≥ 0 (0: no limit), got {}", top_k);
  check(top_p > 0.0 && top_p <= 1.0, "--top-p must be in (0, 1] (1: no limit), got {}", top_p);
  check(temperature > 0.0 || (top_k == 0 && top_p == 1.0),
        "--top-k and --top-p need --temperature > 0 (temperature 0 is greedy decoding)");
}

Sampler::Sampler(SamplingConfig config) : config_(config) { config_.validate(); }

int32_t Sampler::next(std::span<const float> logits) {
  check(!logits.empty(), "sampling from no logits");
  const int64_t V = int64_t(logits.size());
  if (config_.temperature == 0.0) return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());

  const double max = *std::max_element(logits.begin(), logits.end());
  probs_.resize(size_t(V));
  for (int64_t i = 0; i < V; i++) probs_[size_t(i)] = std::exp((double(logits[size_t(i)]) - max) / config_.temperature);
  ids_.resize(size_t(V));
  std::iota(ids_.begin(), ids_.end(), 0);
  size_t kept = size_t(V);
  const bool truncates = config_.top_k > 0 || config_.top_p < 1.0;
  if (truncates) {
    const auto more_probable = [&](int32_t a, int32_t b) {
      return probs_[size_t(a)] != probs_[size_t(b)] ? probs_[size_t(a)] > probs_[size_t(b)] : a < b;
    };
    if (config_.top_k > 0 && config_.top_k < V) {
      kept = size_t(config_.top_k);
      std::partial_sort(ids_.begin(), ids_.begin() + int64_t(kept), ids_.end(), more_probable);
    } else {
      std::sort(ids_.begin(), ids_.end(), more_probable);
    }
    if (config_.top_p < 1.0) {
      double mass = 0.0;
      for (size_t i = 0; i < kept; i++) mass += probs_[size_t(ids_[i])];
      double before = 0.0;
      size_t n = 0;
      while (n < kept && before < config_.top_p * mass) before += probs_[size_t(ids_[n++])];
      kept = n;
    }
  }
  double mass = 0.0;
  for (size_t i = 0; i < kept; i++) mass += probs_[size_t(ids_[i])];
  const double target = uniform_open(mix64(mix64(config_.seed ^ 0x5851f42d4c957f2dull) ^ mix64(draws_++))) * mass;
  double cumulative = 0.0;
  for (size_t i = 0; i < kept; i++) {
    cumulative += probs_[size_t(ids_[i])];
    if (cumulative > target) return ids_[i];
  }
  return ids_[kept - 1];  // rounding left the target at the very end of the mass
}

}  // namespace replica::model
