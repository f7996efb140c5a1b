// bfloat16 storage type and round-to-nearest-even conversion (the rounding PyTorch and oneDNN use).
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

namespace replica {

struct bf16 {
  uint16_t bits;
};

inline bf16 to_bf16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((u >> 16) | 0x40)};  // NaN stays quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{uint16_t(u >> 16)};
}

inline float to_float(bf16 x) { return std::bit_cast<float>(uint32_t(x.bits) << 16); }

inline float round_to_bf16(float x) { return to_float(to_bf16(x)); }

void convert_to_bf16(const float* src, bf16* dst, size_t n);
void convert_to_float(const bf16* src, float* dst, size_t n);
// dst[i] = round_to_bf16(src[i]): the rounded values kept in fp32, for the fp32 matmul where there is no bf16 one.
// Widened from `rounded`, src's bf16 copy, where the caller has one (nullptr: rounded here).
void round_to_bf16(const float* src, const bf16* rounded, float* dst, size_t n);

}  // namespace replica
