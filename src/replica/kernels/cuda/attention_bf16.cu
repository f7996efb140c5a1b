// Flash attention with bf16 operands on tensor cores (nvcuda::wmma 16×16×16, fp32 accumulators), forward and
// a deterministic two-pass backward; the contract is attention.h's, the structure that of attention.cu.
//
// Every block has 4 warps (128 threads) and every warp owns 16 rows of the block's tile: its rows of the
// score matrix, of the probabilities and of the accumulators. Only the shared K/V (or Q/dO) tiles need
// block-wide barriers; everything a warp computes from its own rows is ordered by __syncwarp.
//
// wmma fragments have an unspecified element-to-(row, column) mapping, so every row-wise step (softmax,
// masking, dS) goes through shared memory: the warp stores its score fragments as fp32 rows, works on the
// rows, and writes bf16 rows that the next product loads as fragments. The forward pass keeps its output
// accumulator in shared memory for the same reason (it is rescaled row by row); the backward accumulators
// (dQ, dK, dV) are never rescaled and stay in registers.
//
//   forward   block (64 queries, head, batch): S = Q·Kᵀ, online softmax, O += P·V over the visible key tiles
//   delta     Σ_d dO·O per row (attention.cu's kernel)
//   dK, dV    block (64 keys, KV head, batch): for the group's query heads in order, then the visible tiles of
//             32 queries in order: Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ, dV += Pᵀ·dO, dK += dSᵀ·Q
//   dQ        block (64 queries, head, batch): over the visible key tiles in order: dQ += dS·K
//
// Shared-memory rows are padded (bf16 rows by 8 elements, fp32 rows by 4) so that the 8 rows a fragment
// load touches at once start in different banks. Head dims are template parameters (16, 32, …, 128), so
// fragment arrays are unrolled into registers.
#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/attention_tiles.cuh"
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

namespace {

using namespace nvcuda;
using namespace attention_tiles;

constexpr int kWarps = kThreads / 32;  // kThreads, kBlockRows: attention_tiles.cuh
constexpr int kRowsPerWarp = 16;
static_assert(kBlockRows == kWarps * kRowsPerWarp, "a block's rows are its warps' rows");
constexpr int kKeyTile = 64;                       // keys per tile in the forward and dQ passes
constexpr int kQueryTile = 32;                     // queries per tile in the dK/dV pass (smaller: 2 blocks/SM)

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16_t, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16_t, wmma::row_major>;
// FragBT reads a row-major tile as its transpose.
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16_t, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Row strides (elements) of the shared tiles: bf16 rows padded by 16 bytes (ld_head, attention_tiles.cuh), fp32
// rows by 16 bytes. Every stride keeps fragment pointers 32-byte aligned (wmma's requirement) at multiples of 16
// rows and columns.
template <int cols>
constexpr int ld_f32 = cols + 4;  // fp32 [rows][cols] scratch: scores, output accumulator
template <int cols>
constexpr int ld_b16 = cols + 8;  // bf16 [rows][cols]: P, dS

// Writes a warp's 16 × D fp32 accumulator fragments, times `scale`, to rows [t0, t0 + n) (n ≤ 16) of head `head`
// of y [T, heads, D] (offset to the batch). Each fragment passes through `stage` (16 rows, stride ld, the
// warp's own scratch rows) because the fragment layout is unspecified.
template <int D>
__device__ void store_rows(float* y, const FragC (&acc)[D / 16], float scale, float* stage, int ld, int64_t t0,
                           int64_t n, int64_t heads, int64_t head) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int f = 0; f < D / 16; f++) {
    wmma::store_matrix_sync(stage, acc[f], ld, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 16 * 16; e += 32) {
      const int r = e / 16, c = e % 16;
      if (r < n) y[((t0 + r) * heads + head) * D + f * 16 + c] = stage[r * ld + c] * scale;
    }
    __syncwarp();  // the stage is rewritten by the next fragment
  }
}

// ---- Forward ------------------------------------------------------------------------------------------------

template <int D>
struct ForwardSmem {
  static constexpr size_t q = size_t(kBlockRows) * ld_head<D> * 2;       // Q tile, bf16
  static constexpr size_t kv = size_t(kKeyTile) * ld_head<D> * 2;        // K tile, V tile, bf16
  static constexpr size_t s = size_t(kBlockRows) * ld_f32<kKeyTile> * 4;   // scores, fp32
  static constexpr size_t p = size_t(kBlockRows) * ld_b16<kKeyTile> * 2;   // probabilities, bf16
  static constexpr size_t o = size_t(kBlockRows) * ld_f32<D> * 4;          // output accumulator, fp32
  static constexpr size_t bytes = q + 2 * kv + s + p + o;
  static_assert(q % 128 == 0 && kv % 128 == 0 && s % 128 == 0 && p % 128 == 0, "segments stay 128-byte aligned");
};

template <int D>
__global__ void __launch_bounds__(kThreads) attention_forward_bf16_kernel(float* out, float* lse, const float* q,
                                                                          const float* k, const float* v, int64_t T,
                                                                          int64_t H, int64_t K, int64_t window,
                                                                          float scale) {
  unsigned char* smem = dynamic_shared_memory();
  using L = ForwardSmem<D>;
  constexpr int ldh = ld_head<D>, lds = ld_f32<kKeyTile>, ldp = ld_b16<kKeyTile>, ldo = ld_f32<D>;
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem);
  bf16_t* Ks = reinterpret_cast<bf16_t*>(smem + L::q);
  bf16_t* Vs = reinterpret_cast<bf16_t*>(smem + L::q + L::kv);
  float* S = reinterpret_cast<float*>(smem + L::q + 2 * L::kv);
  bf16_t* P = reinterpret_cast<bf16_t*>(smem + L::q + 2 * L::kv + L::s);
  float* O = reinterpret_cast<float*>(smem + L::q + 2 * L::kv + L::s + L::p);

  const int64_t i0 = int64_t(blockIdx.x) * kBlockRows, h = blockIdx.y, b = blockIdx.z, g = h / (H / K);
  const int64_t nq = min(int64_t(kBlockRows), T - i0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row0 = warp * kRowsPerWarp;
  const float* kb = k + b * T * K * D;
  const float* vb = v + b * T * K * D;

  load_rows_bf16<D>(Qs, kBlockRows, q + b * T * H * D, i0, nq, H, h);
  for (int e = threadIdx.x; e < kBlockRows * ldo; e += kThreads) O[e] = 0.0f;
  // Running max and sum of this warp's rows; every lane holds the same values (butterfly reductions).
  float m[kRowsPerWarp], l[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; r++) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }

  for (int64_t j0 = first_key(i0, window); j0 < i0 + nq; j0 += kKeyTile) {
    const int64_t nk = min(int64_t(kKeyTile), i0 + nq - j0);
    __syncthreads();  // every warp is done with the previous K and V (and Q, O are ready on the first tile)
    load_rows_bf16<D>(Ks, kKeyTile, kb, j0, nk, K, g);
    load_rows_bf16<D>(Vs, kKeyTile, vb, j0, nk, K, g);
    __syncthreads();

    // S = Q·Kᵀ for this warp's 16 rows: one Q fragment per step of 16 over D, reused for the 4 key columns.
    {
      FragC s[kKeyTile / 16];
#pragma unroll
      for (int c = 0; c < kKeyTile / 16; c++) wmma::fill_fragment(s[c], 0.0f);
#pragma unroll 2  // not fully: the compiler would hoist every K fragment load (254 registers)
      for (int kk = 0; kk < D / 16; kk++) {
        FragA a;
        wmma::load_matrix_sync(a, Qs + row0 * ldh + kk * 16, ldh);
#pragma unroll
        for (int c = 0; c < kKeyTile / 16; c++) {
          FragBT bt;
          wmma::load_matrix_sync(bt, Ks + c * 16 * ldh + kk * 16, ldh);
          wmma::mma_sync(s[c], a, bt, s[c]);
        }
      }
#pragma unroll
      for (int c = 0; c < kKeyTile / 16; c++)
        wmma::store_matrix_sync(S + row0 * lds + c * 16, s[c], lds, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax, row by row, each lane two columns: rescale what was accumulated when the max grows.
    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kKeyTile, window);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) {
      const int row = row0 + r;
      float x[kKeyTile / 32];
      float row_max = -INFINITY;
#pragma unroll
      for (int u = 0; u < kKeyTile / 32; u++) {
        const int c = lane + 32 * u;
        x[u] = S[row * lds + c] * scale;
        if (mask && !(row < nq && c < nk && visible(i0 + row, j0 + c, window))) x[u] = -INFINITY;
        row_max = fmaxf(row_max, x[u]);
      }
      const float m_new = fmaxf(m[r], warp_max(row_max));
      // A row that has seen no visible key yet keeps m = −inf and l = 0; subtracting 0 instead of −inf keeps
      // exp(−inf − (−inf)) = NaN out: its p and alpha are exp(−inf) = 0.
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      float sum = 0.0f;
#pragma unroll
      for (int u = 0; u < kKeyTile / 32; u++) {
        const float p = __expf(x[u] - base);  // fast exp: its error (~1e-6) is far below bf16's
        sum += p;
        P[row * ldp + lane + 32 * u] = __float2bfloat16_rn(p);
      }
      const float alpha = __expf(m[r] - base);
      l[r] = l[r] * alpha + warp_sum(sum);  // the fp32 probabilities, not their bf16 roundings
      m[r] = m_new;
      for (int d = lane; d < D; d += 32) O[row * ldo + d] *= alpha;
    }
    __syncwarp();

    // O += P·V: the warp's 4 P fragments are loaded once and reused for every 16 columns of D.
    FragA pf[kKeyTile / 16];
#pragma unroll
    for (int kk = 0; kk < kKeyTile / 16; kk++) wmma::load_matrix_sync(pf[kk], P + row0 * ldp + kk * 16, ldp);
#pragma unroll
    for (int n = 0; n < D / 16; n++) {
      FragC o;
      wmma::load_matrix_sync(o, O + row0 * ldo + n * 16, ldo, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kKeyTile / 16; kk++) {
        FragB bv;
        wmma::load_matrix_sync(bv, Vs + kk * 16 * ldh + n * 16, ldh);
        wmma::mma_sync(o, pf[kk], bv, o);
      }
      wmma::store_matrix_sync(O + row0 * ldo + n * 16, o, ldo, wmma::mem_row_major);
    }
  }
  __syncwarp();  // the warp's O stores are visible to all its lanes

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; r++) {
    const int row = row0 + r;
    if (row >= nq) break;
    const float inv = 1.0f / l[r];
    float* o = out + ((b * T + i0 + row) * H + h) * D;
    for (int d = lane; d < D; d += 32) o[d] = O[row * ldo + d] * inv;
    if (lane == 0) lse[(b * H + h) * T + i0 + row] = m[r] + logf(l[r]);
  }
}

// ---- Backward -----------------------------------------------------------------------------------------------

template <int D>
struct DkDvSmem {
  static constexpr size_t kv = size_t(kBlockRows) * ld_head<D> * 2;       // K tile, V tile, bf16
  static constexpr size_t q = size_t(kQueryTile) * ld_head<D> * 2;        // Q tile, dO tile, bf16
  static constexpr size_t s = size_t(kBlockRows) * ld_f32<kQueryTile> * 4;  // Sᵀ, dPᵀ, fp32
  static constexpr size_t p = size_t(kBlockRows) * ld_b16<kQueryTile> * 2;  // Pᵀ, dSᵀ, bf16
  static constexpr size_t stats = size_t(kQueryTile) * 4;                   // lse, delta
  static constexpr size_t bytes = 2 * kv + 2 * q + 2 * s + 2 * p + 2 * stats;
  static_assert(kv % 128 == 0 && q % 128 == 0 && s % 128 == 0 && p % 128 == 0, "segments stay 128-byte aligned");
};

// One block per (64 keys, KV head, batch); warp w owns keys 16w..16w+15 and their dK, dV rows (registers).
template <int D>
__global__ void __launch_bounds__(kThreads) attention_dkdv_bf16_kernel(float* dk, float* dv, const float* dout,
                                                                       const float* lse, const float* delta,
                                                                       const float* q, const float* k,
                                                                       const float* v, int64_t T, int64_t H,
                                                                       int64_t K, int64_t window, float scale) {
  unsigned char* smem = dynamic_shared_memory();
  using L = DkDvSmem<D>;
  constexpr int ldh = ld_head<D>, lds = ld_f32<kQueryTile>, ldp = ld_b16<kQueryTile>;
  bf16_t* Ks = reinterpret_cast<bf16_t*>(smem);
  bf16_t* Vs = reinterpret_cast<bf16_t*>(smem + L::kv);
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem + 2 * L::kv);
  bf16_t* dOs = reinterpret_cast<bf16_t*>(smem + 2 * L::kv + L::q);
  float* ST = reinterpret_cast<float*>(smem + 2 * L::kv + 2 * L::q);
  float* dPT = reinterpret_cast<float*>(smem + 2 * L::kv + 2 * L::q + L::s);
  bf16_t* PT = reinterpret_cast<bf16_t*>(smem + 2 * L::kv + 2 * L::q + 2 * L::s);
  bf16_t* dST = reinterpret_cast<bf16_t*>(smem + 2 * L::kv + 2 * L::q + 2 * L::s + L::p);
  float* lse_s = reinterpret_cast<float*>(smem + 2 * L::kv + 2 * L::q + 2 * L::s + 2 * L::p);
  float* delta_s = lse_s + kQueryTile;

  const int64_t j0 = int64_t(blockIdx.x) * kBlockRows, g = blockIdx.y, b = blockIdx.z, group = H / K;
  const int64_t nk = min(int64_t(kBlockRows), T - j0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row0 = warp * kRowsPerWarp;

  load_rows_bf16<D>(Ks, kBlockRows, k + b * T * K * D, j0, nk, K, g);
  load_rows_bf16<D>(Vs, kBlockRows, v + b * T * K * D, j0, nk, K, g);
  FragC dK[D / 16], dV[D / 16];
#pragma unroll
  for (int n = 0; n < D / 16; n++) {
    wmma::fill_fragment(dK[n], 0.0f);
    wmma::fill_fragment(dV[n], 0.0f);
  }
  // Queries that see any key of this tile: j0 ≤ i ≤ j0 + nk − 1 + W − 1.
  const int64_t i_end = window > 0 ? min(T, j0 + nk - 1 + window) : T;

  for (int64_t h = g * group; h < (g + 1) * group; h++)
    for (int64_t i0 = j0; i0 < i_end; i0 += kQueryTile) {
      const int64_t nq = min(int64_t(kQueryTile), T - i0);
      __syncthreads();  // every warp is done with the previous Q, dO, lse and delta (K, V ready the first time)
      load_rows_bf16<D>(Qs, kQueryTile, q + b * T * H * D, i0, nq, H, h);
      load_rows_bf16<D>(dOs, kQueryTile, dout + b * T * H * D, i0, nq, H, h);
      load_row_stats(lse_s, delta_s, kQueryTile, lse, delta, (b * H + h) * T + i0, nq);
      __syncthreads();

      // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for this warp's 16 keys × 32 queries.
      {
        FragC s[kQueryTile / 16], dp[kQueryTile / 16];
#pragma unroll
        for (int c = 0; c < kQueryTile / 16; c++) {
          wmma::fill_fragment(s[c], 0.0f);
          wmma::fill_fragment(dp[c], 0.0f);
        }
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
          FragA a_k, a_v;
          wmma::load_matrix_sync(a_k, Ks + row0 * ldh + kk * 16, ldh);
          wmma::load_matrix_sync(a_v, Vs + row0 * ldh + kk * 16, ldh);
#pragma unroll
          for (int c = 0; c < kQueryTile / 16; c++) {
            FragBT bt;
            wmma::load_matrix_sync(bt, Qs + c * 16 * ldh + kk * 16, ldh);
            wmma::mma_sync(s[c], a_k, bt, s[c]);
            wmma::load_matrix_sync(bt, dOs + c * 16 * ldh + kk * 16, ldh);
            wmma::mma_sync(dp[c], a_v, bt, dp[c]);
          }
        }
#pragma unroll
        for (int c = 0; c < kQueryTile / 16; c++) {
          wmma::store_matrix_sync(ST + row0 * lds + c * 16, s[c], lds, wmma::mem_row_major);
          wmma::store_matrix_sync(dPT + row0 * lds + c * 16, dp[c], lds, wmma::mem_row_major);
        }
      }
      __syncwarp();

      // Pᵀ = exp(scale·Sᵀ − lse) and dSᵀ = Pᵀ ∘ (dPᵀ − delta), zero where masked; lane = query column.
      const bool mask = needs_mask(i0, nq, kQueryTile, j0, nk, kBlockRows, window);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; r++) {
        const int row = row0 + r, c = lane;  // row: key, c: query
        float p = 0.0f, ds = 0.0f;
        if (!mask || (c < nq && row < nk && visible(i0 + c, j0 + row, window))) {
          p = __expf(ST[row * lds + c] * scale - lse_s[c]);
          ds = p * (dPT[row * lds + c] - delta_s[c]);
        }
        PT[row * ldp + c] = __float2bfloat16_rn(p);
        dST[row * ldp + c] = __float2bfloat16_rn(ds);
      }
      __syncwarp();

      // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end), the warp's A fragments loaded once.
      FragA pt[kQueryTile / 16], dst[kQueryTile / 16];
#pragma unroll
      for (int kk = 0; kk < kQueryTile / 16; kk++) {
        wmma::load_matrix_sync(pt[kk], PT + row0 * ldp + kk * 16, ldp);
        wmma::load_matrix_sync(dst[kk], dST + row0 * ldp + kk * 16, ldp);
      }
#pragma unroll
      for (int n = 0; n < D / 16; n++)
#pragma unroll
        for (int kk = 0; kk < kQueryTile / 16; kk++) {
          FragB bm;
          wmma::load_matrix_sync(bm, dOs + kk * 16 * ldh + n * 16, ldh);
          wmma::mma_sync(dV[n], pt[kk], bm, dV[n]);
          wmma::load_matrix_sync(bm, Qs + kk * 16 * ldh + n * 16, ldh);
          wmma::mma_sync(dK[n], dst[kk], bm, dK[n]);
        }
    }

  // The warp's ST rows are its own: stage the results there.
  const int64_t n_rows = max(int64_t(0), min(int64_t(kRowsPerWarp), nk - row0));
  store_rows<D>(dk + b * T * K * D, dK, scale, ST + row0 * lds, lds, j0 + row0, n_rows, K, g);
  store_rows<D>(dv + b * T * K * D, dV, 1.0f, ST + row0 * lds, lds, j0 + row0, n_rows, K, g);
}

template <int D>
struct DqSmem {
  static constexpr size_t tile = size_t(kBlockRows) * ld_head<D> * 2;     // Q, dO, K, V tiles, bf16 (64 rows each)
  static constexpr size_t s = size_t(kBlockRows) * ld_f32<kKeyTile> * 4;  // S, dP, fp32
  static constexpr size_t p = size_t(kBlockRows) * ld_b16<kKeyTile> * 2;  // dS, bf16
  static constexpr size_t stats = size_t(kBlockRows) * 4;                 // lse, delta
  static constexpr size_t bytes = 4 * tile + 2 * s + p + 2 * stats;
  static_assert(tile % 128 == 0 && s % 128 == 0 && p % 128 == 0, "segments stay 128-byte aligned");
};
static_assert(kKeyTile == kBlockRows, "DqSmem sizes K and V tiles with kBlockRows");

// One block per (64 queries, head, batch); warp w owns queries 16w..16w+15 and their dQ rows (registers).
template <int D>
__global__ void __launch_bounds__(kThreads) attention_dq_bf16_kernel(float* dq, const float* dout, const float* lse,
                                                                     const float* delta, const float* q,
                                                                     const float* k, const float* v, int64_t T,
                                                                     int64_t H, int64_t K, int64_t window,
                                                                     float scale) {
  unsigned char* smem = dynamic_shared_memory();
  using L = DqSmem<D>;
  constexpr int ldh = ld_head<D>, lds = ld_f32<kKeyTile>, ldp = ld_b16<kKeyTile>;
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem);
  bf16_t* dOs = reinterpret_cast<bf16_t*>(smem + L::tile);
  bf16_t* Ks = reinterpret_cast<bf16_t*>(smem + 2 * L::tile);
  bf16_t* Vs = reinterpret_cast<bf16_t*>(smem + 3 * L::tile);
  float* S = reinterpret_cast<float*>(smem + 4 * L::tile);
  float* dP = reinterpret_cast<float*>(smem + 4 * L::tile + L::s);
  bf16_t* dS = reinterpret_cast<bf16_t*>(smem + 4 * L::tile + 2 * L::s);
  float* lse_s = reinterpret_cast<float*>(smem + 4 * L::tile + 2 * L::s + L::p);
  float* delta_s = lse_s + kBlockRows;

  const int64_t i0 = int64_t(blockIdx.x) * kBlockRows, h = blockIdx.y, b = blockIdx.z, g = h / (H / K);
  const int64_t nq = min(int64_t(kBlockRows), T - i0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row0 = warp * kRowsPerWarp;
  const float* kb = k + b * T * K * D;
  const float* vb = v + b * T * K * D;

  load_rows_bf16<D>(Qs, kBlockRows, q + b * T * H * D, i0, nq, H, h);
  load_rows_bf16<D>(dOs, kBlockRows, dout + b * T * H * D, i0, nq, H, h);
  load_row_stats(lse_s, delta_s, kBlockRows, lse, delta, (b * H + h) * T + i0, nq);
  FragC dQ[D / 16];
#pragma unroll
  for (int n = 0; n < D / 16; n++) wmma::fill_fragment(dQ[n], 0.0f);

  for (int64_t j0 = first_key(i0, window); j0 < i0 + nq; j0 += kKeyTile) {
    const int64_t nk = min(int64_t(kKeyTile), i0 + nq - j0);
    __syncthreads();  // every warp is done with the previous K and V (Q, dO and the stats ready the first time)
    load_rows_bf16<D>(Ks, kKeyTile, kb, j0, nk, K, g);
    load_rows_bf16<D>(Vs, kKeyTile, vb, j0, nk, K, g);
    __syncthreads();

    // S = Q·Kᵀ and dP = dO·Vᵀ for this warp's 16 queries × 64 keys.
    {
      FragC s[kKeyTile / 16], dp[kKeyTile / 16];
#pragma unroll
      for (int c = 0; c < kKeyTile / 16; c++) {
        wmma::fill_fragment(s[c], 0.0f);
        wmma::fill_fragment(dp[c], 0.0f);
      }
#pragma unroll 2  // not fully: the compiler would hoist every K, V fragment load (spills)
      for (int kk = 0; kk < D / 16; kk++) {
        FragA a_q, a_do;
        wmma::load_matrix_sync(a_q, Qs + row0 * ldh + kk * 16, ldh);
        wmma::load_matrix_sync(a_do, dOs + row0 * ldh + kk * 16, ldh);
#pragma unroll
        for (int c = 0; c < kKeyTile / 16; c++) {
          FragBT bt;
          wmma::load_matrix_sync(bt, Ks + c * 16 * ldh + kk * 16, ldh);
          wmma::mma_sync(s[c], a_q, bt, s[c]);
          wmma::load_matrix_sync(bt, Vs + c * 16 * ldh + kk * 16, ldh);
          wmma::mma_sync(dp[c], a_do, bt, dp[c]);
        }
      }
#pragma unroll
      for (int c = 0; c < kKeyTile / 16; c++) {
        wmma::store_matrix_sync(S + row0 * lds + c * 16, s[c], lds, wmma::mem_row_major);
        wmma::store_matrix_sync(dP + row0 * lds + c * 16, dp[c], lds, wmma::mem_row_major);
      }
    }
    __syncwarp();

    // dS = P ∘ (dP − delta) with P = exp(scale·S − lse), zero where masked; each lane two key columns.
    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kKeyTile, window);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) {
      const int row = row0 + r;
#pragma unroll
      for (int u = 0; u < kKeyTile / 32; u++) {
        const int c = lane + 32 * u;
        float ds = 0.0f;
        if (!mask || (row < nq && c < nk && visible(i0 + row, j0 + c, window))) {
          const float p = __expf(S[row * lds + c] * scale - lse_s[row]);
          ds = p * (dP[row * lds + c] - delta_s[row]);
        }
        dS[row * ldp + c] = __float2bfloat16_rn(ds);
      }
    }
    __syncwarp();

    // dQ += dS·K (scaled at the end).
    FragA a[kKeyTile / 16];
#pragma unroll
    for (int kk = 0; kk < kKeyTile / 16; kk++) wmma::load_matrix_sync(a[kk], dS + row0 * ldp + kk * 16, ldp);
#pragma unroll
    for (int n = 0; n < D / 16; n++)
#pragma unroll
      for (int kk = 0; kk < kKeyTile / 16; kk++) {
        FragB bk;
        wmma::load_matrix_sync(bk, Ks + kk * 16 * ldh + n * 16, ldh);
        wmma::mma_sync(dQ[n], a[kk], bk, dQ[n]);
      }
  }

  // The warp's S rows are its own: stage the result there (after the last dS·K, nothing reads them).
  const int64_t n_rows = max(int64_t(0), min(int64_t(kRowsPerWarp), nq - row0));
  __syncwarp();
  store_rows<D>(dq + b * T * H * D, dQ, scale, S + row0 * lds, lds, i0 + row0, n_rows, H, h);
}

template <int D>
struct WmmaKernels {
  static constexpr auto forward = attention_forward_bf16_kernel<D>;
  static constexpr auto dkdv = attention_dkdv_bf16_kernel<D>;
  static constexpr auto dq = attention_dq_bf16_kernel<D>;
  static constexpr size_t forward_bytes = ForwardSmem<D>::bytes, dkdv_bytes = DkDvSmem<D>::bytes,
                          dq_bytes = DqSmem<D>::bytes;
  static constexpr const char *forward_name = "attention_forward_bf16", *dkdv_name = "attention_dkdv_bf16",
                              *dq_name = "attention_dq_bf16";
};

}  // namespace

void attention_forward_bf16(Context& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                            const AttentionShape& s) {
  launch_forward<WmmaKernels>(ctx, out, lse, q, k, v, s);
}

void attention_backward_bf16(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                             const float* lse, const float* q, const float* k, const float* v,
                             const AttentionShape& s) {
  launch_backward<WmmaKernels>(ctx, dq, dk, dv, dout, out, lse, q, k, v, s);
}

}  // namespace replica::cuda
