// AdamW update, element by element in OLMo-core's foreach order of fp32 operations, so one step agrees
// bit for bit with torch's fp32 foreach ops (no fused multiply-adds: each product is rounded, as in torch).
#include "replica/optim/adamw.h"

#include <algorithm>
#include <cmath>

#include "replica/core/error.h"

// No contraction of a*b + c into a fused multiply-add in this file: torch rounds every product.
#pragma GCC optimize("fp-contract=off")

namespace replica {

static constexpr size_t kChunk = 1 << 15;  // floats per parallel work unit

AdamW::AdamW(const ParamTable& table, AdamWConfig config, size_t begin, size_t end)
    : config_(config), begin_(std::min(begin, table.total())), end_(std::min(end, table.total())) {
  check(begin_ <= end_, "AdamW: shard [{}, {}) is empty or reversed", begin, end);
  exp_avg.assign(end_ - begin_, 0.0f);
  exp_avg_sq.assign(end_ - begin_, 0.0f);
  for (const ParamEntry& e : table.entries()) {
    const size_t lo = std::max(e.offset, begin_), hi = std::min(e.offset + e.numel, end_);
    for (size_t b = lo; b < hi; b += kChunk)
      chunks_.push_back({b, std::min(b + kChunk, hi), e.kind != ParamKind::embedding});
  }
}

void AdamW::step(float* params, const float* grads, double lr) {
  step_count++;
  const AdamWConfig& c = config_;
  // The scalars, computed as torch computes them from Python floats and fp32 0-d tensors:
  //   decay = 1 - (lr*wd);  w1 = 1 - β1, w2 = 1 - β2;  bc1 = 1 - β1^t, bc2 = 1 - β2^t  (fp32 pow);
  //   step_size = lr / bc1 (torch: reciprocal(bc1) * lr);  denominator divisor sqrt(bc2).
  const float decay = 1.0f - float(lr * c.weight_decay);
  const float w1 = float(1 - c.beta1), keep1 = 1.0f - w1;
  const float w2 = float(1 - c.beta2), keep2 = 1.0f - w2;
  const float t = float(step_count);
  const float bc1 = 1.0f - std::pow(float(c.beta1), t);
  const float bc2 = 1.0f - std::pow(float(c.beta2), t);
  const float neg_step_size = -((1.0f / bc1) * float(lr));
  const float bc2_sqrt = std::sqrt(bc2);
  const float eps = float(c.eps);
  float* m = exp_avg.data();  // m[i - begin_] belongs to element i of the flat buffer
  float* v = exp_avg_sq.data();
  const size_t b0 = begin_;
  const int64_t n_chunks = int64_t(chunks_.size());
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n_chunks; k++) {
    const Chunk& chunk = chunks_[size_t(k)];
    const float p_scale = chunk.decay ? decay : 1.0f;
    for (size_t i = chunk.begin; i < chunk.end; i++) {
      float g = grads[i];
      float p = params[i] * p_scale;
      float& mi = m[i - b0];
      float& vi = v[i - b0];
      mi = mi * keep1 + g * w1;
      vi = vi * keep2 + (g * g) * w2;
      float denom = std::sqrt(vi) / bc2_sqrt + eps;
      params[i] = p + (mi / denom) * neg_step_size;
    }
  }
}

}  // namespace replica
