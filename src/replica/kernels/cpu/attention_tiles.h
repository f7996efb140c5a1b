// What the two CPU attention kernels (attention.cc: fp32, attention_bf16.cc: bf16 products) share: the tile size
// and where the backward writes dK and dV (the GQA gradient sum). Both visit the same tiles in the same order (from the
// first key that RowMask, kernels/attention_mask.h, gives a tile's first query), so a query slice starting on a tile
// boundary gives the bits of the whole row in either.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "replica/kernels/attention.h"

namespace replica::cpu::attention_tiles {

constexpr int64_t BQ = 64;  // queries per tile
constexpr int64_t BK = 64;  // keys per tile

// Where the backward's dK and dV go. Each (b, h) accumulates its query head's dK and dV over all keys, [T, D] each,
// and hands them to write(): with MHA straight into dk, dv [B, T, K, D]; with grouped-query attention into a slice
// of its own ([B, T, H, D]), and finish() sums a KV head's group in head order (the same order in both kernels).
class KeyGradients {
 public:
  KeyGradients(float* dk, float* dv, const AttentionShape& s)
      : dk_(dk), dv_(dv), BT_(s.B * s.T), T_(s.T), H_(s.H), K_(s.K), D_(s.D), group_(s.H / s.K) {
    if (group_ > 1) {
      dk_heads_.assign(size_t(BT_ * H_ * D_), 0.0f);
      dv_heads_.assign(size_t(BT_ * H_ * D_), 0.0f);
    }
  }

  // Query head h of row b: dK · dk_scale (the part of 1/√D its kernel left out of dK) and dV. Heads write disjoint
  // memory, so the threads of a parallel loop may call it at once.
  void write(int64_t b, int64_t h, const float* dK, const float* dV, float dk_scale) {
    float* dk = group_ > 1 ? dk_heads_.data() : dk_;  // [B, T, H, D] either way (K = H without groups)
    float* dv = group_ > 1 ? dv_heads_.data() : dv_;
    for (int64_t t = 0; t < T_; t++)
      for (int64_t d = 0; d < D_; d++) {
        dk[((b * T_ + t) * H_ + h) * D_ + d] = dK[t * D_ + d] * dk_scale;
        dv[((b * T_ + t) * H_ + h) * D_ + d] = dV[t * D_ + d];
      }
  }

  // After every head is written: a KV head's gradient is the sum over its group's query heads, in head order.
  void finish() {
    if (group_ == 1) return;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t bt = 0; bt < BT_; bt++)
      for (int64_t g = 0; g < K_; g++)
        for (int64_t d = 0; d < D_; d++) {
          float sk = 0.0f, sv = 0.0f;
          for (int64_t h = g * group_; h < (g + 1) * group_; h++) {
            sk += dk_heads_[size_t((bt * H_ + h) * D_ + d)];
            sv += dv_heads_[size_t((bt * H_ + h) * D_ + d)];
          }
          dk_[(bt * K_ + g) * D_ + d] = sk;
          dv_[(bt * K_ + g) * D_ + d] = sv;
        }
  }

 private:
  float* dk_;
  float* dv_;
  int64_t BT_, T_, H_, K_, D_, group_;
  std::vector<float> dk_heads_, dv_heads_;  // [B·T, H, D] with GQA, else empty
};

}  // namespace replica::cpu::attention_tiles
