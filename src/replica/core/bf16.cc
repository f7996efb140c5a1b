// Bulk fp32 <-> bf16 conversion, parallel over fixed contiguous ranges.
#include "replica/core/bf16.h"

namespace replica {

void convert_to_bf16(const float* src, bf16* dst, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) dst[i] = to_bf16(src[i]);
}

void convert_to_float(const bf16* src, float* dst, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) dst[i] = to_float(src[i]);
}

void round_to_bf16(const float* src, const bf16* rounded, float* dst, size_t n) {
  if (rounded) return convert_to_float(rounded, dst, n);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) dst[i] = round_to_bf16(src[i]);
}

}  // namespace replica
