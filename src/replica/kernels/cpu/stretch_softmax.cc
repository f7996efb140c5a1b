// stretch_softmax.h.
#include "replica/kernels/cpu/stretch_softmax.h"

#include <algorithm>
#include <cmath>

#include "replica/kernels/cpu/simd.h"

namespace replica::cpu {

float stretch_exps(float* l, int64_t n, bool keep, float* max) {
#if REPLICA_STRETCH512
  __m512 v[kSoftmaxStretch / 16];
  const int nv = int((n + 15) / 16), live = int(n - 16 * (nv - 1));
  auto lanes_of = [&](int j) { return j < nv - 1 ? stretch512::kAll : __mmask16((1u << live) - 1); };
  for (int j = 0; j < nv; j++) v[j] = _mm512_maskz_loadu_ps(lanes_of(j), l + 16 * j);
  const float sum = stretch512::exps(v, nv, live, max);
  if (keep)
    for (int j = 0; j < nv; j++) _mm512_mask_storeu_ps(l + 16 * j, lanes_of(j), v[j]);
  return sum;
#else
  const float m = simd::max_of(l, n);
  *max = m;
  simd::native lanes[simd::kParts] = {};
  int64_t i = 0;
  for (; i + simd::kWidth <= n; i += simd::kWidth)
    for (int p = 0; p < simd::kParts; p++) {
      float* at = l + i + p * simd::kNativeWidth;
      const simd::native e = simd::exp(simd::load<simd::native>(at) - m);
      if (keep) simd::store(at, e);
      lanes[p] += e;
    }
  float sum = simd::tree_sum(lanes);
  for (; i < n; i++) {
    const float e = simd::exp(simd::splat(l[i] - m))[0];
    if (keep) l[i] = e;
    sum += e;
  }
  return sum;
#endif
}

void row_stretch_exps(float* l, int64_t V, bool keep, StretchSums sums) {
  for (int64_t s = 0; s < sums.count; s++) {
    const int64_t v0 = s * kSoftmaxStretch;
    sums.sum[s] = stretch_exps(l + v0, std::min(kSoftmaxStretch, V - v0), keep, &sums.max[s]);
  }
}

double row_sum_of_exps(StretchSums sums, float* factor, float* row_max) {
  const float M = simd::max_of(sums.max, sums.count);
  *row_max = M;
  int64_t s = 0;
  for (; s + simd::kWidth <= sums.count; s += simd::kWidth)
    simd::store(factor + s, simd::exp(simd::load(sums.max + s) - M));
  for (; s < sums.count; s++) factor[s] = simd::exp(simd::splat(sums.max[s] - M))[0];
  double total = 0.0;
  for (s = 0; s < sums.count; s++) total += double(sums.sum[s] * factor[s]);
  return total;
}

}  // namespace replica::cpu
