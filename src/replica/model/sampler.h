// Choosing the next token from a position's logits. Temperature 0 is greedy: the largest logit, the lowest id
// among equal ones (torch.argmax's choice). Otherwise, in the order of HF transformers' logits warpers:
//   1. temperature: p ∝ exp((logit − max) / T), in double;
//   2. top-k: keep the k most probable ids (ties in probability: lower id first);
//   3. top-p: of those, in descending probability, keep each id while the mass before it is below p (the
//      smallest set whose mass reaches p; HF's TopPLogitsWarper keeps the same set);
//   4. draw u uniform in (0, 1) and walk the kept ids, in descending probability when top-k or top-p truncated
//      and in id order otherwise, to the first whose cumulative mass exceeds u × (kept mass).
// Draw i of seed s is a pure function of (s, i) (core/rng.h), so a seed gives the same tokens every run.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace replica::model {

struct SamplingConfig {
  double temperature = 0.0;  // 0: greedy
  int64_t top_k = 0;         // 0: no limit
  double top_p = 1.0;        // 1: no limit
  uint64_t seed = 0;
  // replica::Error naming the flag (--temperature, --top-k, --top-p) for values outside their range, or top-k /
  // top-p with greedy decoding (they would be ignored).
  void validate() const;
};

class Sampler {
 public:
  explicit Sampler(SamplingConfig config);
  // The next token among ids [0, logits.size()).
  int32_t next(std::span<const float> logits);

 private:
  SamplingConfig config_;
  uint64_t draws_ = 0;
  std::vector<int32_t> ids_;  // candidates, reused across calls
  std::vector<double> probs_;
};

}  // namespace replica::model
