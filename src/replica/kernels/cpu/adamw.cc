// AdamW update, element by element in OLMo-core's foreach order of fp32 operations, so one step agrees
// bit for bit with torch's fp32 foreach ops (no fused multiply-adds: each product is rounded, as in torch).
#include "replica/kernels/cpu/adamw.h"

#include <cmath>

// No contraction of a*b + c into a fused multiply-add in this file: torch rounds every product.
#pragma GCC optimize("fp-contract=off")

namespace replica::cpu {

void adamw_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, size_t shard_begin,
                const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s) {
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n_chunks; k++) {
    const AdamWChunk& chunk = chunks[k];
    const float p_scale = chunk.decay ? s.decay : 1.0f;
    for (size_t i = chunk.begin; i < chunk.end; i++) {
      const size_t j = i - shard_begin;
      float g = grads[j] * s.grad_scale;
      float p = params[j] * p_scale;
      float& m = exp_avg[j];
      float& v = exp_avg_sq[j];
      m = m * s.keep1 + g * s.w1;
      v = v * s.keep2 + (g * g) * s.w2;
      float denom = std::sqrt(v) / s.bc2_sqrt + s.eps;
      params[j] = p + (m / denom) * s.neg_step_size;
    }
  }
}

}  // namespace replica::cpu
