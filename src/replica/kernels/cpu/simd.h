// 16-wide float vectors (GCC vector extensions: one AVX-512 register, or split on narrower ISAs) and a
// vectorisable exp. Kernels use these where the compiler cannot keep accumulators in registers by itself.
#pragma once
#include <cstdint>
#include <cstring>

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
inline f16v max(f16v a, f16v b) { return a > b ? a : b; }

// exp(x) to ~1 ulp (Cephes expf): x = n·ln2 + r with |r| ≤ ln2/2, exp(r) by a degree-6 polynomial,
// 2^n by building the float exponent. exp(x) = 0 for x < −87.3 (including −inf).
inline f16v exp(f16v x) {
  const f16v clamped = x < -87.3f ? splat(-87.3f) : (x > 88.7f ? splat(88.7f) : x);
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
  return x < -87.3f ? f16v{} : result;
}

}  // namespace replica::cpu::simd
