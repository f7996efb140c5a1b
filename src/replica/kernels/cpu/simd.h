// 16-wide float vectors (GCC vector extensions: one AVX-512 register, or split on narrower ISAs) and a
// vectorisable exp; 8-wide ones (one AVX2 register) and 8 × 8 transposes; `native`, whichever of the two is one
// register, for loops that carry 16 lanes. Kernels use these where the compiler cannot keep accumulators in
// registers by itself.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace replica::cpu::simd {

typedef float f16v __attribute__((vector_size(64)));
typedef int32_t i16v __attribute__((vector_size(64)));
constexpr int kWidth = 16;
typedef float f8v __attribute__((vector_size(32)));

// The float vector the CPU holds in one register: f16v under AVX-512 (and in the portable build), f8v under AVX2. A
// loop that carries 16-lane accumulators keeps them as kParts native vectors: under AVX2 GCC keeps a carried f16v in
// memory and moves it through general registers every iteration (perf: most of softmax_row's time), but a native
// vector in a register. Lane j of the 16 is lane j % kNativeWidth of part j / kNativeWidth, so the same sums.
#if defined(__AVX2__) && !defined(__AVX512F__)
using native = f8v;
#else
using native = f16v;
#endif
constexpr int kNativeWidth = int(sizeof(native) / sizeof(float));
constexpr int kParts = kWidth / kNativeWidth;

// Unaligned loads and stores of either width: load(p) a 16-lane vector, load<f8v>(p) an 8-lane one.
template <typename V = f16v>
inline V load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store(void* p, f8v v) { std::memcpy(p, &v, sizeof(v)); }
#if defined(__AVX2__) && !defined(__AVX512F__)
// GCC holds a 16-lane vector in two AVX2 registers but copies it to memory (memcpy) in 16-byte pieces through the
// stack and general registers; two 8-lane stores instead.
inline void store(void* p, f16v v) {
  __m256 h[2];
  std::memcpy(h, &v, sizeof(h));
  _mm256_storeu_ps(static_cast<float*>(p), h[0]);
  _mm256_storeu_ps(static_cast<float*>(p) + 8, h[1]);
}
#else
inline void store(void* p, f16v v) { std::memcpy(p, &v, sizeof(v)); }
#endif
template <typename V = f16v>
inline V splat(float x) {
  return V{} + x;
}

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
template <typename V>
inline V exp_of_clamped(V clamped) {
  typedef int32_t lanes_of_int __attribute__((vector_size(sizeof(V))));
  const V n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const V r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const lanes_of_int bits = (__builtin_convertvector(n, lanes_of_int) + 127) << 23;
  const V result = p * (V)bits;  // same-size vector cast: reinterprets the bits
  return result;
}

namespace portable {
template <typename V>
inline V max(V a, V b) {
  return a > b ? a : b;
}

// exp(x); exp(x) = 0 for x < −87.3 (including −inf).
template <typename V>
inline V exp(V x) {
  const V clamped = x < -87.3f ? splat<V>(-87.3f) : (x > 88.7f ? splat<V>(88.7f) : x);
  const V result = exp_of_clamped(clamped);
  return x < -87.3f ? V{} : result;
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

// One AVX2 register (simd::native). vmaxps(a, b) is a > b ? a : b, and vminps(a, b) a < b ? a : b, NaN operands
// included.
inline f8v max(f8v a, f8v b) { return f8v(_mm256_max_ps(__m256(a), __m256(b))); }

inline f8v exp(f8v x) {
  // x < −87.3 ? −87.3 : (x > 88.7 ? 88.7 : x): the inner choice is x whenever x < −87.3.
  const f8v clamped = f8v(_mm256_max_ps(_mm256_set1_ps(-87.3f), _mm256_min_ps(_mm256_set1_ps(88.7f), __m256(x))));
  const f8v result = exp_of_clamped(clamped);
  // x < −87.3 ? 0 : result
  return f8v(_mm256_andnot_ps(_mm256_cmp_ps(__m256(x), _mm256_set1_ps(-87.3f), _CMP_LT_OQ), __m256(result)));
}

// 16 lanes: the same on each half.
inline f16v max(f16v a, f16v b) {
  return per_half(a, b, [](__m256 x, __m256 y) { return __m256(max(f8v(x), f8v(y))); });
}
inline f16v exp(f16v x) {
  return per_half(x, x, [](__m256 v, __m256) { return __m256(exp(f8v(v))); });
}
#else
using portable::exp;
using portable::max;
#endif

// 16 lanes carried as kParts native vectors: lane j, and the 16-lane max and sum in max(f16v)'s and sum(f16v)'s order.
inline float lane(const native (&parts)[kParts], int j) { return parts[j / kNativeWidth][j % kNativeWidth]; }
inline float max(const native (&parts)[kParts]) {
  float m = lane(parts, 0);
  for (int j = 1; j < kWidth; j++) m = lane(parts, j) > m ? lane(parts, j) : m;
  return m;
}
inline float sum(const native (&parts)[kParts]) {
  float s = 0.0f;
  for (int j = 0; j < kWidth; j++) s += lane(parts, j);
  return s;
}

// The same 16 lanes reduced as a tree: lanes j and j + 8 first, then j + 4, j + 2 and j + 1 (a fixed order, and four
// steps instead of fifteen lane extracts, for reductions over few elements).
template <typename Op>
inline float tree(const native (&parts)[kParts], Op op) {
  typedef float f4v __attribute__((vector_size(16)));
  typedef float f2v __attribute__((vector_size(8)));
  f8v eight;
  if constexpr (kParts == 2)
    eight = op(parts[0], parts[1]);
  else
    eight = op(__builtin_shufflevector(parts[0], parts[0], 0, 1, 2, 3, 4, 5, 6, 7),
               __builtin_shufflevector(parts[0], parts[0], 8, 9, 10, 11, 12, 13, 14, 15));
  const f4v four =
      op(__builtin_shufflevector(eight, eight, 0, 1, 2, 3), __builtin_shufflevector(eight, eight, 4, 5, 6, 7));
  const f2v two = op(__builtin_shufflevector(four, four, 0, 1), __builtin_shufflevector(four, four, 2, 3));
  return op(two[0], two[1]);
}
inline float tree_max(const native (&parts)[kParts]) {
  return tree(parts, [](auto a, auto b) { return a > b ? a : b; });
}
inline float tree_sum(const native (&parts)[kParts]) {
  return tree(parts, [](auto a, auto b) { return a + b; });
}

// The largest of x[0, n) (−inf for n = 0): 16 lanes, carried as kParts native vectors, reduced as a tree (a maximum is
// exact in any order), then the rest one by one.
inline float max_of(const float* x, int64_t n) {
  native lanes[kParts];
  for (native& part : lanes) part = splat<native>(-INFINITY);
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth)
    for (int p = 0; p < kParts; p++) lanes[p] = max(lanes[p], load<native>(x + i + p * kNativeWidth));
  float m = tree_max(lanes);
  for (; i < n; i++) m = std::max(m, x[i]);
  return m;
}

// The 8 × 8 block a[k][j] → t[j][k] (rows of 8 lanes), by shuffles: moves of bits, so any 32-bit words.
__attribute__((always_inline)) inline void transpose8(f8v t[8], const f8v a[8]) {
  // __builtin_shufflevector (GCC 12 and clang alike) takes constant lane indices: 0–7 the first operand, 8–15 the
  // second.
  f8v u[8], w[8];
  for (int k = 0; k < 8; k += 2) {
    u[k] = __builtin_shufflevector(a[k], a[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    u[k + 1] = __builtin_shufflevector(a[k], a[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int k = 0; k < 8; k += 4)
    for (int i = 0; i < 2; i++) {
      w[k + 2 * i] = __builtin_shufflevector(u[k + i], u[k + i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      w[k + 2 * i + 1] = __builtin_shufflevector(u[k + i], u[k + i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  // w[0..3]: lanes j and j + 4 of rows 0–3, w[4..7] of rows 4–7, for j = 0, 1, 2, 3.
  for (int j = 0; j < 4; j++) {
    t[j] = __builtin_shufflevector(w[j], w[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    t[j + 4] = __builtin_shufflevector(w[j], w[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// dst[j · ldd + k] = src[k · lds + j] for an 8 × 8 block of 32-bit words (floats, or pairs of bf16), strides in words.
__attribute__((always_inline)) inline void transpose8(void* dst, int64_t ldd, const void* src, int64_t lds) {
  f8v a[8], t[8];
  for (int k = 0; k < 8; k++) a[k] = load<f8v>(static_cast<const char*>(src) + 4 * k * lds);
  transpose8(t, a);
  for (int j = 0; j < 8; j++) store(static_cast<char*>(dst) + 4 * j * ldd, t[j]);
}

// Copies whole 64-byte lines to a 64-byte aligned dst with streaming (non-temporal) stores: for output that is read
// next from memory anyway, a normal store would first read each line it overwrites and push other data out of the
// caches. Weakly ordered: the writer calls stream_fence() before another thread reads dst.
inline void stream_lines(void* dst, const void* src, size_t lines) {
#if defined(__AVX512F__)
  for (size_t i = 0; i < lines; i++)
    _mm512_stream_si512(static_cast<__m512i*>(dst) + i, _mm512_loadu_si512(static_cast<const __m512i*>(src) + i));
#elif defined(__AVX2__)
  for (size_t i = 0; i < 2 * lines; i++)
    _mm256_stream_si256(static_cast<__m256i*>(dst) + i, _mm256_loadu_si256(static_cast<const __m256i*>(src) + i));
#else
  std::memcpy(dst, src, 64 * lines);
#endif
}
inline void stream_fence() {
#if defined(__AVX2__)
  _mm_sfence();
#endif
}

}  // namespace replica::cpu::simd
