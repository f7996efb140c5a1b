// The LM head's softmax by stretches of 96 vocabulary entries, the one definition every CPU path of lm_head_loss
// uses (the narrow head's own kernels in their epilogue, the others over the GEMM's logits), so all paths keep each
// other's bits.
//
// Each stretch s of a row's logits gives its largest logit m_s and e_j = exp(l_j − m_s), summed to S_s; the row's
// sum of exps is then Σ_s S_s · exp(m_s − M), M the largest m_s, in double, and a logit's softmax
// e_j · exp(m_s − M) / Σ. Why stretches rather than the row's largest logit up front: the narrow head's kernel has a
// stretch's logits in registers and finishes the stretch there (its largest, exps and sum), so the forward alone
// never writes the logits to memory, and the training forward writes the exps once and the softmax does not read them
// back (bench/RESULTS.md, issue 34). The stretch is the kernel's tile of vocabulary (narrow_head.cc).
#pragma once
#include <cmath>
#include <cstdint>
#include <initializer_list>

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#define REPLICA_STRETCH512 1
#include <immintrin.h>
#endif

namespace replica::cpu {

constexpr int64_t kSoftmaxStretch = 96;

// A row's stretches: max[s] and sum[s] for s in [0, count).
struct StretchSums {
  float* max;
  float* sum;
  int64_t count;
};

inline int64_t stretches_of(int64_t V) { return (V + kSoftmaxStretch - 1) / kSoftmaxStretch; }

#if REPLICA_STRETCH512
namespace stretch512 {

// GCC 12 warns of the undefined source that the plain forms of these intrinsics pass: their zero-masking forms, all
// lanes kept.
constexpr __mmask16 kAll = 0xffff;
__attribute__((always_inline)) inline __m512 max(__m512 a, __m512 b) { return _mm512_maskz_max_ps(kAll, a, b); }
__attribute__((always_inline)) inline __m256 lower_half(__m512 v) { return _mm512_maskz_extractf32x8_ps(0xff, v, 0); }
__attribute__((always_inline)) inline __m256 upper_half(__m512 v) { return _mm512_maskz_extractf32x8_ps(0xff, v, 1); }

// exp(x) for x ≤ 0 (and −inf, NaN) to ~1 ulp, normal results and subnormals alike: 2^n · exp(r), x = n·ln2 + r,
// |r| ≤ ln2/2, exp(r) by Cephes expf's polynomial, 2^n by vscalefps (which needs no clamp at the top, nor below
// −87.3 where the float exponent would end: the result fades to zero). 13 instructions where simd::exp's portable
// form takes ~22 (with that one the stretches' exps were a quarter of a narrow head's forward, bench/RESULTS.md).
// Each step is one instruction (fused multiply-adds written out, nothing the compiler may contract): the same bits
// wherever it is inlined.
__attribute__((always_inline)) inline __m512 exp_nonpositive(__m512 x) {
  x = max(_mm512_set1_ps(-104.0f), x);  // exp(−104) rounds to 0; NaN stays NaN (the second operand)
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f, 1.0f, 1.0f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// The 16 lanes' largest and sum, as a tree: lanes j and j + 8, then j + 4, j + 2, j + 1.
__attribute__((always_inline)) inline float reduce_max(__m512 v) {
  const __m256 h = _mm256_max_ps(lower_half(v), upper_half(v));
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
}
__attribute__((always_inline)) inline float reduce_add(__m512 v) {
  const __m256 h = _mm256_add_ps(lower_half(v), upper_half(v));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}

// A stretch in registers: nv ≤ 6 vectors of logits, lanes [0, live) of the last one live. Returns the sum of
// exp(v − m) over the live lanes, m their largest (into *largest), and leaves the exps in v (zero in dead lanes).
__attribute__((always_inline)) inline float exps(__m512* v, int nv, int live, float* largest) {
  const __mmask16 last = __mmask16((1u << live) - 1);
  __m512 m = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), last, v[nv - 1]);
  for (int j = 0; j < nv - 1; j++) m = max(m, v[j]);
  *largest = reduce_max(m);
  const __m512 shift = _mm512_set1_ps(*largest);
  __m512 sum = _mm512_setzero_ps();
  for (int j = 0; j < nv; j++) {
    v[j] = exp_nonpositive(_mm512_sub_ps(v[j], shift));
    if (j == nv - 1) v[j] = _mm512_maskz_mov_ps(last, v[j]);
    sum = _mm512_add_ps(sum, v[j]);
  }
  return reduce_add(sum);
}

}  // namespace stretch512
#endif

// Σ exp(l[i] − m) over l[0, n), n ≤ kSoftmaxStretch, in fp32 in a fixed order, m the largest l[i] (into *max); with
// keep, l[i] becomes exp(l[i] − m). Under AVX-512 the same instructions as stretch512::exps (the narrow head's
// kernel), so the same bits.
float stretch_exps(float* l, int64_t n, bool keep, float* max);

// A row's logits l[0, V) by stretches: sums.max/sum [stretches_of(V)], with keep l the exps.
void row_stretch_exps(float* l, int64_t V, bool keep, StretchSums sums);

// The row's sum of exps against its largest logit (into *row_max), in double over the stretches in order, and
// factor[s] = exp(max[s] − M), by which stretch s's exps become exp(l − M).
double row_sum_of_exps(StretchSums sums, float* factor, float* row_max);

}  // namespace replica::cpu
