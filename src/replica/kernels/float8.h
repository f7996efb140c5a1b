// The two 8-bit float formats of float8 training (OCP 8-bit Floating Point Specification, as torch's float8_e4m3fn
// and float8_e5m2) and torchao's tensorwise scaling, for the CPU and CUDA kernels alike (host and device code), and
// the float8 operand of their products.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "replica/kernels/host_device.h"

namespace replica {

// e4m3: 4 exponent bits (bias 7), 3 mantissa bits, no infinities, NaN S.1111.111, max 448 (0x7E): inputs and weights.
// e5m2: 5 exponent bits (bias 15), 2 mantissa bits, IEEE-style ±inf (0x7C) and NaNs, max 57344 (0x7B): gradients.
enum class Float8Format : uint8_t { e4m3, e5m2 };

// A float8 GEMM operand (train.float8): codes (backend memory) laid out as gemm's float operand would be, in one
// format, and the inverse of the scale they were cast with (backend memory, one float), so that the operand's values
// are codes · inverse_scale (torch._scaled_mm's scale_a and scale_b).
struct Float8Matrix {
  const uint8_t* codes;
  Float8Format format;
  const float* inverse_scale;
};

struct Float8Spec {
  int mantissa_bits;
  int bias;
  float max;         // the largest finite value, torch.finfo(dtype).max
  uint8_t max_code;  // its code
};

REPLICA_HOST_DEVICE constexpr Float8Spec float8_spec(Float8Format f) {
  return f == Float8Format::e4m3 ? Float8Spec{3, 7, 448.0f, 0x7E} : Float8Spec{2, 15, 57344.0f, 0x7B};
}

REPLICA_HOST_DEVICE inline uint32_t float8_float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

REPLICA_HOST_DEVICE inline float float8_bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// x to the nearest code (ties to even) after torchao's saturating clamp to ±max (to_fp8_saturated), so ±inf and
// everything beyond max become ±max; NaN becomes the NaN code 0x7F with x's sign (as torch's casts do).
REPLICA_HOST_DEVICE inline uint8_t to_float8(float x, Float8Format f) {
  const Float8Spec s = float8_spec(f);
  const uint32_t u = float8_float_bits(x);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7F;
  const float magnitude = float8_bits_float(a);
  if (magnitude >= s.max) return sign | s.max_code;
  if (a < uint32_t(127 + 1 - s.bias) << 23) {
    // Below the smallest normal: a multiple of the smallest subnormal 2^(1 − bias − m); the scaling by a power of
    // two is exact and rintf rounds half to even, so the multiple is the code itself (2^m: the smallest normal).
    return sign | uint8_t(rintf(magnitude * float(1u << (s.bias - 1 + s.mantissa_bits))));
  }
  // Normal: drop the 23 − m low mantissa bits rounding half to even (a carry moves into the exponent), then rebias.
  const int shift = 23 - s.mantissa_bits;
  const uint32_t rounded = (a + ((1u << (shift - 1)) - 1) + ((a >> shift) & 1u)) >> shift;
  return sign | uint8_t(rounded - (uint32_t(127 - s.bias) << s.mantissa_bits));
}

// The code's exact value (every code is a float32 value): ±inf and NaN for e5m2's specials, NaN for e4m3's 0x7F/0xFF.
REPLICA_HOST_DEVICE inline float from_float8(uint8_t code, Float8Format f) {
  const Float8Spec s = float8_spec(f);
  const bool negative = code & 0x80;
  const uint32_t exponent = (code & 0x7Fu) >> s.mantissa_bits, mantissa = code & ((1u << s.mantissa_bits) - 1);
  const uint32_t top_exponent = (1u << (7 - s.mantissa_bits)) - 1;
  float value;
  if (f == Float8Format::e4m3 && exponent == top_exponent && mantissa == (1u << s.mantissa_bits) - 1) {
    value = NAN;
  } else if (f == Float8Format::e5m2 && exponent == top_exponent) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else if (exponent == 0) {
    value = float(mantissa) / float(1u << (s.bias - 1 + s.mantissa_bits));  // subnormal: m · 2^(1 − bias − m)
  } else {
    value = float8_bits_float((exponent + 127 - s.bias) << 23 | mantissa << (23 - s.mantissa_bits));
  }
  return negative ? -value : value;
}

// torchao's amax_to_scale: max / max(amax, 1e-12) in double, rounded to float32, then with round_scales_to_power_of_2
// the largest power of two not above it (exactly; torchao's exp2(floor(log2)) in float32 agrees except within
// an ulp below a power of two). A NaN amax gives a NaN scale, as torch.clamp propagates it.
REPLICA_HOST_DEVICE inline float float8_scale(float amax, Float8Format f, bool power_of_two) {
  if (amax != amax) return amax;
  const double clamped = double(amax) > 1e-12 ? double(amax) : 1e-12;
  const float scale = float(double(float8_spec(f).max) / clamped);
  if (!power_of_two) return scale;
  return float8_bits_float(float8_float_bits(scale) & 0xff800000u);  // a positive normal float: keep its exponent
}

}  // namespace replica
