// AdamW update, element by element in OLMo-core's foreach order of fp32 operations, so one step agrees
// bit for bit with torch's fp32 foreach ops (no fused multiply-adds: each product is rounded, as in torch).
#include "replica/optim/adamw.h"

#include <algorithm>
#include <cmath>

// No contraction of a*b + c into a fused multiply-add in this file: torch rounds every product.
#pragma GCC optimize("fp-contract=off")

namespace replica {

static constexpr size_t kChunk = 1 << 15;  // floats per parallel work unit

AdamW::AdamW(const ParamTable& table, AdamWConfig config)
    : exp_avg(table.total(), 0.0f), exp_avg_sq(table.total(), 0.0f), config_(config) {
  for (const ParamEntry& e : table.entries())
    for (size_t begin = e.offset; begin < e.offset + e.numel; begin += kChunk)
      chunks_.push_back({begin, std::min(begin + kChunk, e.offset + e.numel), e.kind != ParamKind::embedding});
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
  float* m = exp_avg.data();
  float* v = exp_avg_sq.data();
  const int64_t n_chunks = int64_t(chunks_.size());
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n_chunks; k++) {
    const Chunk& chunk = chunks_[size_t(k)];
    const float p_scale = chunk.decay ? decay : 1.0f;
    for (size_t i = chunk.begin; i < chunk.end; i++) {
      float g = grads[i];
      float p = params[i] * p_scale;
      m[i] = m[i] * keep1 + g * w1;
      v[i] = v[i] * keep2 + (g * g) * w2;
      float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      params[i] = p + (m[i] / denom) * neg_step_size;
    }
  }
}

}  // namespace replica
