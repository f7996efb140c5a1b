// Cached attention on the CPU: one (query, head) pair per loop iteration, its keys visited in position order with
// a running max and sum (the output row itself is the accumulator), so no score vector is ever stored.
#include "replica/kernels/cpu/cached_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "replica/kernels/attention_mask.h"

namespace replica::cpu {

void cached_attention(float* out, const float* q, const float* k, const float* v, const float* k_cache,
                      const float* v_cache, const CachedAttentionShape& s) {
  const int64_t n = s.n, H = s.H, K = s.K, D = s.D, group = H / K;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t r = 0; r < n; r++)
    for (int64_t h = 0; h < H; h++) {
      const int64_t i = s.position + r, kv = h / group;
      const int64_t first = attention_mask::sequence_mask(s.position + s.n, s.window).first_key(i);
      const float* qh = q + (r * H + h) * D;
      float* o = out + (r * H + h) * D;
      std::fill(o, o + D, 0.0f);
      float max = -std::numeric_limits<float>::infinity(), sum = 0.0f;
      for (int64_t j = first; j <= i; j++) {
        // Keys before the new ones come from the cache slot of their position.
        const int64_t row = j < s.position ? (j % s.capacity) * K + kv : (j - s.position) * K + kv;
        const float* kj = (j < s.position ? k_cache : k) + row * D;
        const float* vj = (j < s.position ? v_cache : v) + row * D;
        float score = 0.0f;
        for (int64_t d = 0; d < D; d++) score += qh[d] * scale * kj[d];
        const float new_max = std::max(max, score);
        const float rescale = std::exp(max - new_max), p = std::exp(score - new_max);
        sum = sum * rescale + p;
        for (int64_t d = 0; d < D; d++) o[d] = o[d] * rescale + p * vj[d];
        max = new_max;
      }
      for (int64_t d = 0; d < D; d++) o[d] /= sum;
    }
}

}  // namespace replica::cpu
