// Cached attention: one warp per (query, head). Lane l holds elements l, l + 32, … of the head dim (at most 8), so
// a score is 32 partial products summed by warp_sum, and every lane updates its part of the output accumulator.
#include <stdexcept>

#include "replica/kernels/attention_mask.h"
#include "replica/kernels/cuda/cached_attention.h"
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

namespace {

constexpr int kLanes = 32;
constexpr int kMaxPerLane = 8;  // D ≤ 256

__global__ void cached_attention_kernel(float* out, const float* q, const float* k, const float* v,
                                        const float* k_cache, const float* v_cache, CachedAttentionShape s,
                                        float scale) {
  const int64_t r = blockIdx.x / s.H, h = blockIdx.x % s.H, kv = h / (s.H / s.K);
  const int64_t i = s.position + r, first = attention_mask::sequence_mask(s.position + s.n, s.window).first_key(i);
  const int lane = threadIdx.x;
  const int per_lane = int(ceil_div(s.D, kLanes));
  float qs[kMaxPerLane], acc[kMaxPerLane];
  for (int e = 0; e < per_lane; e++) {
    const int64_t d = lane + e * kLanes;
    qs[e] = d < s.D ? q[(r * s.H + h) * s.D + d] * scale : 0.0f;
    acc[e] = 0.0f;
  }
  float running_max = -INFINITY, sum = 0.0f;
  for (int64_t j = first; j <= i; j++) {
    const bool cached = j < s.position;
    const int64_t row = cached ? (j % s.capacity) * s.K + kv : (j - s.position) * s.K + kv;
    const float* kj = (cached ? k_cache : k) + row * s.D;
    const float* vj = (cached ? v_cache : v) + row * s.D;
    float partial = 0.0f;
    for (int e = 0; e < per_lane; e++) {
      const int64_t d = lane + e * kLanes;
      if (d < s.D) partial += qs[e] * kj[d];
    }
    const float score = warp_sum(partial);
    const float new_max = fmaxf(running_max, score);
    const float rescale = expf(running_max - new_max), p = expf(score - new_max);
    sum = sum * rescale + p;
    for (int e = 0; e < per_lane; e++) {
      const int64_t d = lane + e * kLanes;
      if (d < s.D) acc[e] = acc[e] * rescale + p * vj[d];
    }
    running_max = new_max;
  }
  for (int e = 0; e < per_lane; e++) {
    const int64_t d = lane + e * kLanes;
    if (d < s.D) out[(r * s.H + h) * s.D + d] = acc[e] / sum;
  }
}

}  // namespace

void cached_attention(Context& ctx, float* out, const float* q, const float* k, const float* v, const float* k_cache,
                      const float* v_cache, const CachedAttentionShape& s) {
  if (s.D > kLanes * kMaxPerLane || s.K <= 0 || s.H % s.K != 0)
    throw std::runtime_error("cached_attention: need head dim ≤ 256 and query heads a multiple of KV heads");
  if (s.n * s.H == 0) return;
  launch("cached_attention", cached_attention_kernel, unsigned(s.n * s.H), kLanes, 0, ctx.stream(), out, q, k, v,
         k_cache, v_cache, s, 1.0f / sqrtf(float(s.D)));
}

}  // namespace replica::cuda
