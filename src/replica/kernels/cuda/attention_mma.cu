// Flash attention with bf16 operands on tensor cores through mma.sync (mma.cuh), FlashAttention-2 style:
// every warp owns 16 rows and keeps their scores, probabilities and accumulators in registers, where the
// fragment layout is documented, so a tile costs no shared-memory round trip (attention_bf16.cu's wmma kernels
// stage S, P and dS in shared memory because wmma's layout is unspecified). Same contract, arguments, rounding
// points and outputs as attention_forward_bf16 / attention_backward_bf16, and the same deterministic two-pass
// backward. An accumulator pair of 8-column tiles is one bf16 A fragment of the next product, and every B
// operand whose reduction runs along rows is kept transposed in shared memory, so that its fragments are
// 32-bit loads.
//
//   forward  block (64 queries, head, batch); per visible tile of 64 keys:
//            S = Q·Kᵀ (Q fragments in registers), mask, online softmax on the accumulators (row max and sum
//            over the quad of lanes holding a row), O rescaled in registers, O += P·V (Vᵀ tile)
//   dK, dV   block (64 keys, KV head, batch); for the group's query heads, then the visible tiles of 32 queries,
//            16 at a time: Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ, dV += Pᵀ·dO (dOᵀ tile), dK += dSᵀ·Q (Qᵀ tile)
//   dQ       block (64 queries, head, batch); per visible tile of 64 keys, 16 at a time: S = Q·Kᵀ,
//            dP = dO·Vᵀ (Q, dO fragments in registers), dQ += dS·K (Kᵀ tile)
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/attention_tiles.cuh"
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/mma.cuh"

namespace replica::cuda {

namespace {

using namespace attention_tiles;

constexpr int kRowsPerWarp = 16;     // kThreads (4 warps), kBlockRows (64): attention_tiles.cuh
constexpr int kKeyTile = 64;         // keys per tile in the forward and dQ passes
constexpr int kQueryTile = 32;       // queries per tile in the dK/dV pass
constexpr int kLdVt = kKeyTile + 8;  // row stride of the transposed [D][64] tiles: padded by 16 bytes, as ld_head
constexpr int kLdQt = kQueryTile + 8;  // ... and of the transposed [D][32] tiles

template <int D>
struct MmaForwardSmem {
  static constexpr size_t q = size_t(kBlockRows) * ld_head<D> * 2;  // Q tile, bf16 (read into registers once)
  static constexpr size_t k = size_t(kKeyTile) * ld_head<D> * 2;    // K tile, bf16
  static constexpr size_t vt = size_t(D) * kLdVt * 2;               // Vᵀ tile, bf16
  static constexpr size_t bytes = q + k + vt;
  static_assert(q % 16 == 0 && k % 16 == 0, "segments stay 16-byte aligned");
};

// Max and sum over the quad of lanes that hold one accumulator row (lanes 4g … 4g + 3).
__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// The A fragment (mma.cuh) of rows [0, 16) × columns [0, 16) of a bf16 tile with row stride ld, at lane (g, t).
__device__ inline void load_a(uint32_t (&a)[4], const bf16_t* tile, int ld, int g, int t) {
  const bf16_t* p = tile + g * ld + 2 * t;
  a[0] = load_pair(p);
  a[1] = load_pair(p + 8 * ld);
  a[2] = load_pair(p + 8);
  a[3] = load_pair(p + 8 * ld + 8);
}

// The B fragment of a 16 × 8 product whose B column n is row n of a bf16 tile (row stride ld): B = tileᵀ.
__device__ inline void load_b(uint32_t (&b)[2], const bf16_t* tile, int ld, int g, int t) {
  const bf16_t* p = tile + g * ld + 2 * t;
  b[0] = load_pair(p);
  b[1] = load_pair(p + 8);
}

// Two 16 × 8 accumulator tiles (columns [0, 8) and [8, 16)) rounded to bf16 as the A fragment of a 16 × 16 tile.
__device__ inline void pack_a(uint32_t (&a)[4], const float (&x)[2][4]) {
  a[0] = pack_bf16(x[0][0], x[0][1]);
  a[1] = pack_bf16(x[0][2], x[0][3]);
  a[2] = pack_bf16(x[1][0], x[1][1]);
  a[3] = pack_bf16(x[1][2], x[1][3]);
}

// Writes a warp's 16 × D accumulators, times `scale`, to rows [t0 + row0, t0 + row0 + 16) of head `head` of
// y [T, heads, D] (offset to the batch), those below n only; row0 + g + 8·(e / 2) is element e's row.
template <int D>
__device__ void store_rows(float* y, const float (&acc)[D / 8][4], float scale, int64_t t0, int row0, int64_t n,
                           int64_t heads, int64_t head, int g, int t) {
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int row = row0 + g + 8 * r;
    if (row >= n) continue;
    float* dst = y + ((t0 + row) * heads + head) * D + 2 * t;
#pragma unroll
    for (int dn = 0; dn < D / 8; dn++) {
      dst[dn * 8] = acc[dn][2 * r] * scale;
      dst[dn * 8 + 1] = acc[dn][2 * r + 1] * scale;
    }
  }
}

// ---- Forward ------------------------------------------------------------------------------------------------

// Accumulator element e of a lane (mma.cuh) lies in row g + 8·(e / 2) and column 2t + e % 2 of its 16 × 8 tile.
template <int D>
__global__ void __launch_bounds__(kThreads) attention_forward_mma_kernel(float* out, float* lse, const float* q,
                                                                         const float* k, const float* v, int64_t T,
                                                                         int64_t H, int64_t K, int64_t window,
                                                                         float scale) {
  using L = MmaForwardSmem<D>;
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem);
  bf16_t* Ks = reinterpret_cast<bf16_t*>(smem + L::q);
  bf16_t* Vt = reinterpret_cast<bf16_t*>(smem + L::q + L::k);

  const int64_t i0 = int64_t(blockIdx.x) * kBlockRows, h = blockIdx.y, b = blockIdx.z, kv_head = h / (H / K);
  const int64_t nq = min(int64_t(kBlockRows), T - i0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = warp * kRowsPerWarp;  // the warp's rows in the block: row0 + g and row0 + g + 8 for this lane
  const float* kb = k + b * T * K * D;
  const float* vb = v + b * T * K * D;

  load_rows_bf16<D>(Qs, kBlockRows, q + b * T * H * D, i0, nq, H, h);
  __syncthreads();
  uint32_t qa[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++) load_a(qa[kk], Qs + row0 * ldh + kk * 16, ldh, g, t);

  float o[D / 8][4] = {};
  // Rows g and g + 8: running max (the same on the quad's lanes) and this lane's part of the running sum.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int64_t j0 = first_key(i0, window); j0 < i0 + nq; j0 += kKeyTile) {
    const int64_t nk = min(int64_t(kKeyTile), i0 + nq - j0);
    __syncthreads();  // every warp is done with the previous K and Vᵀ
    load_rows_bf16<D>(Ks, kKeyTile, kb, j0, nk, K, kv_head);
    load_columns_bf16<D>(Vt, kLdVt, kKeyTile, vb, j0, nk, K, kv_head);
    __syncthreads();

    // S = Q·Kᵀ: B(k = d, n = key) column-major is K's rows as stored.
    float s[kKeyTile / 8][4];
#pragma unroll
    for (int n = 0; n < kKeyTile / 8; n++) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        uint32_t kb_frag[2];
        load_b(kb_frag, Ks + n * 8 * ldh + kk * 16, ldh, g, t);
        mma_m16n8k16(s[n], qa[kk], kb_frag);
      }
    }

    // Online softmax: scale, mask, the rows' new maxima, and O rescaled by how much they grew.
    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kKeyTile, window);
    float row_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kKeyTile / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int row = row0 + g + 8 * (e / 2), col = n * 8 + 2 * t + e % 2;
        float x = s[n][e] * scale;
        if (mask && !(row < nq && col < nk && visible(i0 + row, j0 + col, window))) x = -INFINITY;
        s[n][e] = x;
        row_max[e / 2] = fmaxf(row_max[e / 2], x);
      }
    // A row that has seen no visible key yet keeps m = −inf; subtracting 0 instead keeps exp(−inf − (−inf)) =
    // NaN out (attention_bf16.cu does the same).
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const float m_new = fmaxf(m[r], quad_max(row_max[r]));
      base[r] = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = __expf(m[r] - base[r]);
      l[r] *= alpha;
      m[r] = m_new;
#pragma unroll
      for (int dn = 0; dn < D / 8; dn++) {
        o[dn][2 * r] *= alpha;
        o[dn][2 * r + 1] *= alpha;
      }
    }

    // P·V, 16 keys at a time: n-tiles 2j and 2j + 1 of P are the A fragment of keys [16j, 16j + 16).
#pragma unroll
    for (int j = 0; j < kKeyTile / 16; j++) {
      float p[2][4];
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          p[half][e] = __expf(s[2 * j + half][e] - base[e / 2]);
          l[e / 2] += p[half][e];  // the fp32 probabilities, not their bf16 roundings
        }
      uint32_t pa[4];
      pack_a(pa, p);
#pragma unroll
      for (int dn = 0; dn < D / 8; dn++) {  // B(k = key, n = d): Vᵀ's rows
        uint32_t vb_frag[2];
        load_b(vb_frag, Vt + dn * 8 * kLdVt + j * 16, kLdVt, g, t);
        mma_m16n8k16(o[dn], pa, vb_frag);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; r++) {
    const float sum = quad_sum(l[r]), inv = 1.0f / sum;
#pragma unroll
    for (int dn = 0; dn < D / 8; dn++) {
      o[dn][2 * r] *= inv;
      o[dn][2 * r + 1] *= inv;
    }
    const int row = row0 + g + 8 * r;
    if (t == 0 && row < nq) lse[(b * H + h) * T + i0 + row] = m[r] + logf(sum);
  }
  store_rows<D>(out + b * T * H * D, o, 1.0f, i0, row0, nq, H, h, g, t);
}


// ---- Backward -----------------------------------------------------------------------------------------------

template <int D>
struct MmaDkDvSmem {
  static constexpr size_t kv = size_t(kBlockRows) * ld_head<D> * 2;  // K tile, V tile, bf16
  static constexpr size_t q = size_t(kQueryTile) * ld_head<D> * 2;   // Q tile, dO tile, bf16
  static constexpr size_t qt = size_t(D) * kLdQt * 2;                // Qᵀ tile, dOᵀ tile, bf16
  static constexpr size_t stats = size_t(kQueryTile) * 4;            // lse, delta
  static constexpr size_t bytes = 2 * kv + 2 * q + 2 * qt + 2 * stats;
  static_assert(kv % 16 == 0 && q % 16 == 0 && qt % 16 == 0, "segments stay 16-byte aligned");
};

// One block per (64 keys, KV head, batch); warp w owns keys 16w … 16w + 15 and their dK, dV accumulators.
template <int D>
__global__ void __launch_bounds__(kThreads) attention_dkdv_mma_kernel(float* dk, float* dv, const float* dout,
                                                                      const float* lse, const float* delta,
                                                                      const float* q, const float* k, const float* v,
                                                                      int64_t T, int64_t H, int64_t K, int64_t window,
                                                                      float scale) {
  using L = MmaDkDvSmem<D>;
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Ks = reinterpret_cast<bf16_t*>(smem);
  bf16_t* Vs = reinterpret_cast<bf16_t*>(smem + L::kv);
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem + 2 * L::kv);
  bf16_t* dOs = reinterpret_cast<bf16_t*>(smem + 2 * L::kv + L::q);
  bf16_t* Qt = reinterpret_cast<bf16_t*>(smem + 2 * L::kv + 2 * L::q);
  bf16_t* dOt = reinterpret_cast<bf16_t*>(smem + 2 * L::kv + 2 * L::q + L::qt);
  float* lse_s = reinterpret_cast<float*>(smem + 2 * L::kv + 2 * L::q + 2 * L::qt);
  float* delta_s = lse_s + kQueryTile;

  const int64_t j0 = int64_t(blockIdx.x) * kBlockRows, kv_head = blockIdx.y, b = blockIdx.z, group = H / K;
  const int64_t nk = min(int64_t(kBlockRows), T - j0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = warp * kRowsPerWarp;  // the warp's keys in the block

  load_rows_bf16<D>(Ks, kBlockRows, k + b * T * K * D, j0, nk, K, kv_head);
  load_rows_bf16<D>(Vs, kBlockRows, v + b * T * K * D, j0, nk, K, kv_head);
  float dk_acc[D / 8][4] = {}, dv_acc[D / 8][4] = {};
  // Queries that see any key of this tile: j0 ≤ i ≤ j0 + nk − 1 + W − 1.
  const int64_t i_end = window > 0 ? min(T, j0 + nk - 1 + window) : T;

  for (int64_t h = kv_head * group; h < (kv_head + 1) * group; h++)
    for (int64_t i0 = j0; i0 < i_end; i0 += kQueryTile) {
      const int64_t nq = min(int64_t(kQueryTile), T - i0);
      const float* qh = q + b * T * H * D;
      const float* doh = dout + b * T * H * D;
      __syncthreads();  // every warp is done with the previous Q, dO and stats (K, V ready the first time)
      load_rows_bf16<D>(Qs, kQueryTile, qh, i0, nq, H, h);
      load_rows_bf16<D>(dOs, kQueryTile, doh, i0, nq, H, h);
      load_columns_bf16<D>(Qt, kLdQt, kQueryTile, qh, i0, nq, H, h);
      load_columns_bf16<D>(dOt, kLdQt, kQueryTile, doh, i0, nq, H, h);
      load_row_stats(lse_s, delta_s, kQueryTile, lse, delta, (b * H + h) * T + i0, nq);
      __syncthreads();

      const bool mask = needs_mask(i0, nq, kQueryTile, j0, nk, kBlockRows, window);
#pragma unroll
      for (int c = 0; c < kQueryTile / 16; c++) {  // 16 queries at a time
        // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ: the warp's 16 keys × 16 queries (two 8-query tiles).
        float st[2][4] = {}, dpt[2][4] = {};
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
          uint32_t ka[4], va[4];
          load_a(ka, Ks + row0 * ldh + kk * 16, ldh, g, t);
          load_a(va, Vs + row0 * ldh + kk * 16, ldh, g, t);
#pragma unroll
          for (int half = 0; half < 2; half++) {
            uint32_t qb[2], dob[2];
            load_b(qb, Qs + (c * 16 + half * 8) * ldh + kk * 16, ldh, g, t);
            load_b(dob, dOs + (c * 16 + half * 8) * ldh + kk * 16, ldh, g, t);
            mma_m16n8k16(st[half], ka, qb);
            mma_m16n8k16(dpt[half], va, dob);
          }
        }
        // Pᵀ = exp(scale·Sᵀ − lse) and dSᵀ = Pᵀ ∘ (dPᵀ − delta), zero where masked (row: key, column: query).
#pragma unroll
        for (int half = 0; half < 2; half++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int key = row0 + g + 8 * (e / 2), col = c * 16 + half * 8 + 2 * t + e % 2;
            float p = 0.0f, ds = 0.0f;
            if (!mask || (col < nq && key < nk && visible(i0 + col, j0 + key, window))) {
              p = __expf(st[half][e] * scale - lse_s[col]);
              ds = p * (dpt[half][e] - delta_s[col]);
            }
            st[half][e] = p;
            dpt[half][e] = ds;
          }
        // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end): B(k = query, n = d) is dOᵀ's and Qᵀ's rows.
        uint32_t pa[4], dsa[4];
        pack_a(pa, st);
        pack_a(dsa, dpt);
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
          uint32_t dob[2], qb[2];
          load_b(dob, dOt + dn * 8 * kLdQt + c * 16, kLdQt, g, t);
          load_b(qb, Qt + dn * 8 * kLdQt + c * 16, kLdQt, g, t);
          mma_m16n8k16(dv_acc[dn], pa, dob);
          mma_m16n8k16(dk_acc[dn], dsa, qb);
        }
      }
    }

  store_rows<D>(dk + b * T * K * D, dk_acc, scale, j0, row0, nk, K, kv_head, g, t);
  store_rows<D>(dv + b * T * K * D, dv_acc, 1.0f, j0, row0, nk, K, kv_head, g, t);
}

template <int D>
struct MmaDqSmem {
  static constexpr size_t tile = size_t(kBlockRows) * ld_head<D> * 2;  // Q, dO (read into registers), K, V; bf16
  static constexpr size_t kt = size_t(D) * kLdVt * 2;                   // Kᵀ tile, bf16
  static constexpr size_t bytes = 4 * tile + kt;
  static_assert(tile % 16 == 0, "segments stay 16-byte aligned");
};
static_assert(kKeyTile == kBlockRows, "MmaDqSmem sizes the K and V tiles with kBlockRows");

// One block per (64 queries, head, batch); warp w owns queries 16w … 16w + 15 and their dQ accumulators.
template <int D>
__global__ void __launch_bounds__(kThreads) attention_dq_mma_kernel(float* dq, const float* dout, const float* lse,
                                                                    const float* delta, const float* q, const float* k,
                                                                    const float* v, int64_t T, int64_t H, int64_t K,
                                                                    int64_t window, float scale) {
  using L = MmaDqSmem<D>;
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem);
  bf16_t* dOs = reinterpret_cast<bf16_t*>(smem + L::tile);
  bf16_t* Ks = reinterpret_cast<bf16_t*>(smem + 2 * L::tile);
  bf16_t* Vs = reinterpret_cast<bf16_t*>(smem + 3 * L::tile);
  bf16_t* Kt = reinterpret_cast<bf16_t*>(smem + 4 * L::tile);

  const int64_t i0 = int64_t(blockIdx.x) * kBlockRows, h = blockIdx.y, b = blockIdx.z, kv_head = h / (H / K);
  const int64_t nq = min(int64_t(kBlockRows), T - i0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = warp * kRowsPerWarp;
  const float* kb = k + b * T * K * D;
  const float* vb = v + b * T * K * D;

  load_rows_bf16<D>(Qs, kBlockRows, q + b * T * H * D, i0, nq, H, h);
  load_rows_bf16<D>(dOs, kBlockRows, dout + b * T * H * D, i0, nq, H, h);
  __syncthreads();
  uint32_t qa[D / 16][4], doa[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++) {
    load_a(qa[kk], Qs + row0 * ldh + kk * 16, ldh, g, t);
    load_a(doa[kk], dOs + row0 * ldh + kk * 16, ldh, g, t);
  }
  // lse and delta of the lane's rows g and g + 8.
  float row_lse[2], row_delta[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int row = row0 + g + 8 * r;
    const int64_t at = (b * H + h) * T + i0 + row;
    row_lse[r] = row < nq ? lse[at] : 0.0f;
    row_delta[r] = row < nq ? delta[at] : 0.0f;
  }
  float dq_acc[D / 8][4] = {};

  for (int64_t j0 = first_key(i0, window); j0 < i0 + nq; j0 += kKeyTile) {
    const int64_t nk = min(int64_t(kKeyTile), i0 + nq - j0);
    __syncthreads();  // every warp is done with the previous K, V and Kᵀ
    load_rows_bf16<D>(Ks, kKeyTile, kb, j0, nk, K, kv_head);
    load_rows_bf16<D>(Vs, kKeyTile, vb, j0, nk, K, kv_head);
    load_columns_bf16<D>(Kt, kLdVt, kKeyTile, kb, j0, nk, K, kv_head);
    __syncthreads();

    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kKeyTile, window);
#pragma unroll
    for (int j = 0; j < kKeyTile / 16; j++) {  // 16 keys at a time
      // S = Q·Kᵀ and dP = dO·Vᵀ: the warp's 16 queries × 16 keys (two 8-key tiles).
      float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
          uint32_t kb_frag[2], vb_frag[2];
          load_b(kb_frag, Ks + (j * 16 + half * 8) * ldh + kk * 16, ldh, g, t);
          load_b(vb_frag, Vs + (j * 16 + half * 8) * ldh + kk * 16, ldh, g, t);
          mma_m16n8k16(s[half], qa[kk], kb_frag);
          mma_m16n8k16(dp[half], doa[kk], vb_frag);
        }
      // dS = P ∘ (dP − delta) with P = exp(scale·S − lse), zero where masked.
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int row = row0 + g + 8 * (e / 2), col = j * 16 + half * 8 + 2 * t + e % 2;
          float ds = 0.0f;
          if (!mask || (row < nq && col < nk && visible(i0 + row, j0 + col, window))) {
            const float p = __expf(s[half][e] * scale - row_lse[e / 2]);
            ds = p * (dp[half][e] - row_delta[e / 2]);
          }
          dp[half][e] = ds;
        }
      // dQ += dS·K (scaled at the end): B(k = key, n = d) is Kᵀ's rows.
      uint32_t dsa[4];
      pack_a(dsa, dp);
#pragma unroll
      for (int dn = 0; dn < D / 8; dn++) {
        uint32_t kb_frag[2];
        load_b(kb_frag, Kt + dn * 8 * kLdVt + j * 16, kLdVt, g, t);
        mma_m16n8k16(dq_acc[dn], dsa, kb_frag);
      }
    }
  }

  store_rows<D>(dq + b * T * H * D, dq_acc, scale, i0, row0, nq, H, h, g, t);
}

template <int D>
struct MmaKernels {
  static constexpr auto forward = attention_forward_mma_kernel<D>;
  static constexpr auto dkdv = attention_dkdv_mma_kernel<D>;
  static constexpr auto dq = attention_dq_mma_kernel<D>;
  static constexpr size_t forward_bytes = MmaForwardSmem<D>::bytes, dkdv_bytes = MmaDkDvSmem<D>::bytes,
                          dq_bytes = MmaDqSmem<D>::bytes;
  static constexpr const char *forward_name = "attention_forward_mma", *dkdv_name = "attention_dkdv_mma",
                              *dq_name = "attention_dq_mma";
};

}  // namespace

void attention_forward_mma(Context& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                           const AttentionShape& s) {
  launch_forward<MmaKernels>(ctx, out, lse, q, k, v, s);
}

void attention_backward_mma(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                            const float* lse, const float* q, const float* k, const float* v,
                            const AttentionShape& s) {
  launch_backward<MmaKernels>(ctx, dq, dk, dv, dout, out, lse, q, k, v, s);
}

}  // namespace replica::cuda
