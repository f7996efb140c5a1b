// 16-wide float vectors (GCC vector extensions: one AVX-512 register, or split on narrower ISAs) and a
// vectorisable exp. Kernels use these where the compiler cannot keep accumulators in registers by itself.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) && !defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace replica::cpu::simd {

typedef float f16v __attribute__((vector_size(64)));
typedef int32_t i16v __attribute__((vector_size(64)));
constexpr int kWidth = 16;

inline f16v load(const float* p) {
  f16v v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store(float* p, f16v v) { std::memcpy(p, &v, sizeof(v)); }
inline f16v splat(float x) { return f16v{} + x; }

inline float sum(f16v v) {
  float s = 0.0f;
  for (int i = 0; i < kWidth; i++) s += v[i];
  return s;
}
inline float max(f16v v) {
  float m = v[0];
  for (int i = 1; i < kWidth; i++) m = v[i] > m ? v[i] : m;
  return m;
}

// The portable definitions. On AVX2 without AVX-512 GCC splits a 16-lane vector's arithmetic into two 8-lane
// registers but lowers a conditional (`a > b ? a : b`) on it lane by lane, so max and exp below do their
// conditionals per 8-lane half with the AVX2 instructions of the same meaning: the same results, bit for bit
// (Simd.MaxAndExpGiveThePortableBits).
// exp(x) to ~1 ulp (Cephes expf) for x already clamped to [−87.3, 88.7]: x = n·ln2 + r with |r| ≤ ln2/2, exp(r) by a
// degree-6 polynomial, 2^n by building the float exponent. Both exp below clamp, call it, then zero x < −87.3.
inline f16v exp_of_clamped(f16v clamped) {
  const f16v n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const f16v r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
  f16v p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const i16v bits = (__builtin_convertvector(n, i16v) + 127) << 23;
  const f16v result = p * (f16v)bits;  // same-size vector cast: reinterprets the bits
  return result;
}

namespace portable {
inline f16v max(f16v a, f16v b) { return a > b ? a : b; }

// exp(x); exp(x) = 0 for x < −87.3 (including −inf).
inline f16v exp(f16v x) {
  const f16v clamped = x < -87.3f ? splat(-87.3f) : (x > 88.7f ? splat(88.7f) : x);
  const f16v result = exp_of_clamped(clamped);
  return x < -87.3f ? f16v{} : result;
}
}  // namespace portable

#if defined(__AVX2__) && !defined(__AVX512F__)
// f(a, b) on each 8-lane half.
template <typename F>
inline f16v per_half(f16v a, f16v b, F f) {
  __m256 x[2], y[2];
  std::memcpy(x, &a, sizeof(x));
  std::memcpy(y, &b, sizeof(y));
  for (int h = 0; h < 2; h++) x[h] = f(x[h], y[h]);
  f16v out;
  std::memcpy(&out, x, sizeof(out));
  return out;
}

// vmaxps(a, b) is a > b ? a : b, and vminps(a, b) a < b ? a : b, NaN operands included.
inline f16v max(f16v a, f16v b) {
  return per_half(a, b, [](__m256 x, __m256 y) { return _mm256_max_ps(x, y); });
}

inline f16v exp(f16v x) {
  // x < −87.3 ? −87.3 : (x > 88.7 ? 88.7 : x): the inner choice is x whenever x < −87.3.
  const f16v clamped = per_half(x, x, [](__m256 v, __m256) {
    return _mm256_max_ps(_mm256_set1_ps(-87.3f), _mm256_min_ps(_mm256_set1_ps(88.7f), v));
  });
  const f16v result = exp_of_clamped(clamped);
  return per_half(x, result, [](__m256 v, __m256 e) {  // x < −87.3 ? 0 : result
    return _mm256_andnot_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-87.3f), _CMP_LT_OQ), e);
  });
}
#else
using portable::exp;
using portable::max;
#endif

}  // namespace replica::cpu::simd
