// What the two CPU attention kernels (attention.cc: fp32, attention_bf16.cc: bf16 products) share: the tile size
// and the GQA gradient sum. Both visit the same tiles in the same order (from the first key that RowMask,
// kernels/attention_mask.h, gives a tile's first query), so a query slice starting on a tile boundary gives the bits
// of the whole row in either.
#pragma once
#include <cstdint>

namespace replica::cpu::attention_tiles {

constexpr int64_t BQ = 64;  // queries per tile
constexpr int64_t BK = 64;  // keys per tile

// With grouped-query attention the backward accumulates dK and dV per query head ([B·T, H, D]); a KV head's
// gradient is the sum over its group's query heads, in head order (the same order in both kernels).
inline void sum_query_head_groups(float* dk, float* dv, const float* dk_heads, const float* dv_heads, int64_t BT,
                                  int64_t H, int64_t K, int64_t D) {
  const int64_t group = H / K;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bt = 0; bt < BT; bt++)
    for (int64_t g = 0; g < K; g++)
      for (int64_t d = 0; d < D; d++) {
        float sk = 0.0f, sv = 0.0f;
        for (int64_t h = g * group; h < (g + 1) * group; h++) {
          sk += dk_heads[(bt * H + h) * D + d];
          sv += dv_heads[(bt * H + h) * D + d];
        }
        dk[(bt * K + g) * D + d] = sk;
        dv[(bt * K + g) * D + d] = sv;
      }
}

}  // namespace replica::cpu::attention_tiles
