// What the mma.sync and wgmma attention kernels share (attention_mma.cu, attention_wgmma.cu): bf16 tiles fetched
// by cp.async, fragments loaded by ldmatrix, every kernel's prologue (QueryBlock, KeyBlock: which rows a block and
// a lane hold, which tiles they visit, where to mask), the forward's online softmax and the backward's masked P/dS
// step on accumulators in mma.sync's layout, and the bf16 copies of the inputs that every launch makes. Accumulator
// element e of a lane (mma.cuh) lies in row g + 8·(e / 2) and column 2t + e % 2 of its 16 × 8 tile, g = lane / 4
// and t = lane % 4.
#pragma once
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "replica/kernels/cuda/attention_tiles.cuh"
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/gemm.h"
#include "replica/kernels/cuda/mma.cuh"
#include "replica/kernels/cuda/wgmma.cuh"

namespace replica::cuda::attention_tiles {

constexpr int kRowsPerWarp = 16;  // kThreads (4 warps), kBlockRows (64): attention_tiles.cuh
constexpr int kTile = 64;         // keys per tile (forward, dQ) and queries per tile (dK/dV)
static_assert(kTile == kBlockRows, "every shared-memory tile is [kBlockRows][ld_head<D>]");

// Bytes of one bf16 [64][ld_head<D>] tile; a multiple of 16, so tiles laid end to end stay 16-byte aligned.
template <int D>
constexpr size_t kTileBytes = size_t(kTile) * ld_head<D> * 2;

template <int D>
__device__ inline bf16_t* tile_at(unsigned char* smem, int index) {
  return reinterpret_cast<bf16_t*>(smem + index * kTileBytes<D>);
}

// Starts copying rows [t0, t0 + n) of head `head` of x [T, heads, D] (bf16, offset to the batch) into
// tile[64][ld_head<D>], 16 bytes per cp.async; rows ≥ n are zeroed so that they add nothing to any product.
// The caller commits the group.
template <int D>
__device__ inline void copy_rows_async(bf16_t* tile, const bf16_t* x, int64_t t0, int64_t n, int64_t heads,
                                       int64_t head) {
  constexpr int kPieces = D / 8;  // 16-byte pieces per row
  for (int e = threadIdx.x; e < kTile * kPieces; e += kThreads) {
    const int r = e / kPieces, c = (e % kPieces) * 8;
    bf16_t* dst = tile + r * ld_head<D> + c;
    if (r < n) {
      cp_async_16(dst, x + ((t0 + r) * heads + head) * D + c);
    } else {
      *reinterpret_cast<float4*>(dst) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
}

// Starts copying keys [j, j + n) of K and V (offset to the batch) into tiles k_tile and k_tile + 1.
template <int D>
__device__ inline void copy_keys_async(unsigned char* smem, int k_tile, const bf16_t* k, const bf16_t* v, int64_t j,
                                       int64_t n, int64_t K, int64_t kv_head) {
  copy_rows_async<D>(tile_at<D>(smem, k_tile), k, j, n, K, kv_head);
  copy_rows_async<D>(tile_at<D>(smem, k_tile + 1), v, j, n, K, kv_head);
}

// The step at the top of every tile loop: start fetching the next tile into the other stage (fetch_next(),
// when there is one; every warp left that stage at the barrier ending the last iteration), then wait until
// this tile's copies, issued one step earlier, have landed for the whole block. kTensorCoreReads: the tile is
// read through wgmma descriptors, which need the proxy fence between the wait and the barrier (wgmma.cuh).
template <bool kTensorCoreReads = false, typename FetchNext>
__device__ inline void advance_pipeline(bool has_next, FetchNext&& fetch_next) {
  if (has_next) {
    fetch_next();
    cp_async_commit();
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  if constexpr (kTensorCoreReads) fence_shared_for_wgmma();
  __syncthreads();
}

// Fragments (mma.cuh) of 16 × 16 blocks of a tile with row stride ld, at the lane's ldmatrix row address.
// A: the block itself, rows 0–7 and 8–15 by columns 0–7 and 8–15.
__device__ inline void load_a(uint32_t (&a)[4], const bf16_t* block, int ld, int lane) {
  const int m = lane / 8, r = lane % 8;
  ldmatrix_x4<false>(a, block + (r + 8 * (m % 2)) * ld + 8 * (m / 2));
}
// B of two 16 × 8 products whose B column n is row n of the block (B = blockᵀ, the reduction along the block's
// columns): b[0], b[1] for rows 0–7, b[2], b[3] for rows 8–15.
__device__ inline void load_b_rows(uint32_t (&b)[4], const bf16_t* block, int ld, int lane) {
  const int m = lane / 8, r = lane % 8;
  ldmatrix_x4<false>(b, block + (r + 8 * (m / 2)) * ld + 8 * (m % 2));
}
// B of two 16 × 8 products whose B is the block itself (the reduction along its rows): b[0], b[1] for columns
// 0–7, b[2], b[3] for columns 8–15.
__device__ inline void load_b_columns(uint32_t (&b)[4], const bf16_t* block, int ld, int lane) {
  const int m = lane / 8, r = lane % 8;
  ldmatrix_x4<true>(b, block + (r + 8 * (m % 2)) * ld + 8 * (m / 2));
}

// d0 += a · (b[0], b[1]) and d1 += a · (b[2], b[3]): the two products whose B fragments one load_b_* gave.
__device__ inline void mma_pair(float (&d0)[4], float (&d1)[4], const uint32_t (&a)[4], const uint32_t (&b)[4]) {
  const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
  mma_m16n8k16(d0, a, b0);
  mma_m16n8k16(d1, a, b1);
}

// Max and sum over the quad of lanes that hold one accumulator row (lanes 4g … 4g + 3).
__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Columns [16j, 16j + 16) of a warp's accumulator tiles (n-tiles 2j and 2j + 1) rounded to bf16 as the A
// fragment of a 16 × 16 tile.
template <int N>
__device__ inline void pack_columns(uint32_t (&a)[4], const float (&x)[N][4], int j) {
  a[0] = pack_bf16(x[2 * j][0], x[2 * j][1]);
  a[1] = pack_bf16(x[2 * j][2], x[2 * j][3]);
  a[2] = pack_bf16(x[2 * j + 1][0], x[2 * j + 1][1]);
  a[3] = pack_bf16(x[2 * j + 1][2], x[2 * j + 1][3]);
}
__device__ inline void pack_a(uint32_t (&a)[4], const float (&x)[2][4]) { pack_columns(a, x, 0); }

// lse and delta of the warp's rows row0 + g and row0 + g + 8 (0 past nq), from the block's first row `at`.
__device__ inline void row_stats(float (&row_lse)[2], float (&row_delta)[2], const float* lse, const float* delta,
                                 int64_t at, int64_t nq, int row0, int g) {
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int row = row0 + g + 8 * r;
    row_lse[r] = row < nq ? lse[at + row] : 0.0f;
    row_delta[r] = row < nq ? delta[at + row] : 0.0f;
  }
}

// Writes a warp's 16 × kCols accumulators, times `scale`, to rows [t0 + row0, t0 + row0 + 16) and head dims
// [col0, col0 + kCols) of head `head` of y [T, heads, D] (offset to the batch), those below n only; row0 + g +
// 8·(e / 2) is element e's row. `add`: added to what y holds there instead.
template <int D, int kCols = D>
__device__ inline void store_rows(float* y, const float (&acc)[kCols / 8][4], float scale, int64_t t0, int row0,
                                  int64_t n, int64_t heads, int64_t head, int g, int t, int col0 = 0,
                                  bool add = false) {
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int row = row0 + g + 8 * r;
    if (row >= n) continue;
    float* dst = y + ((t0 + row) * heads + head) * D + col0 + 2 * t;
#pragma unroll
    for (int dn = 0; dn < kCols / 8; dn++) {
      const float x0 = acc[dn][2 * r] * scale, x1 = acc[dn][2 * r + 1] * scale;
      dst[dn * 8] = add ? dst[dn * 8] + x0 : x0;
      dst[dn * 8 + 1] = add ? dst[dn * 8 + 1] + x1 : x1;
    }
  }
}

// The query tiles a dK/dV block of keys [j0, j0 + nk) visits: for each of its KV head's `group` query heads in
// order, the tiles of kTile queries from the one holding query j0 to the last query that sees one of the keys (that
// of the last key: j0 + nk − 1 + W − 1, or its document's end). Query tiles start at the first query, Q0 (0 unless
// the row holds only its last queries, kernels/attention.h), so a block of keys before Q0 starts at Q0's tile, and one
// whose keys no query sees has none (count = 0, and then no index may be asked for). They are numbered 0 … count − 1
// so that one loop can fetch the next tile while it works on this one.
struct QueryTiles {
  int64_t i_first, T, first_head, group, per_head, count;
  __device__ QueryTiles(int64_t j0, int64_t nk, const RowMask& row_mask, int64_t kv_head, int64_t group_, int64_t Q0)
      : i_first(Q0 + max(j0 - Q0, int64_t(0)) / kTile * kTile), T(row_mask.T), first_head(kv_head * group_),
        group(group_) {
    const int64_t i_end = row_mask.query_end(j0 + nk - 1);
    per_head = i_end > i_first ? ceil_div(i_end - i_first, kTile) : 0;
    count = per_head * group;
  }
  __device__ int64_t head(int64_t index) const { return first_head + index / per_head; }
  __device__ int64_t first_query(int64_t index) const { return i_first + (index % per_head) * kTile; }
  __device__ int64_t rows(int64_t index) const { return min(int64_t(kTile), T - first_query(index)); }
  // The same tiles numbered last first, each tile for every head before the one in front of it: the order in which
  // the wgmma backward's blocks of consecutive key tiles meet each query tile at the same step (attention_wgmma.cu).
  // (32-bit division: a block visits far fewer than 2³¹ tiles, and 64-bit division costs the kernel registers.)
  __device__ int64_t head_from_last(int64_t index) const { return first_head + int(index) % int(group); }
  __device__ int64_t first_query_from_last(int64_t index) const {
    return i_first + (per_head - 1 - int(index) / int(group)) * kTile;
  }
};

// What a thread of a block of 64 queries (forward, dQ; blockIdx: query tile, head, batch) knows before its tile
// loop, the same for every tensor-core kernel: the block's rows, the lane's two of them, the keys the block visits
// and the first key each row sees. Positions are key positions; the row's queries are [Q0, T), held from 0 in q, out,
// dq, lse (Tq of them).
struct QueryBlock {
  int64_t T, Tq, Q0, H, K, i0, h, b, kv_head, nq;
  int lane, g, t, row0;    // row0: the warp's first row; the lane holds rows row0 + g and row0 + g + 8
  int64_t j_begin, j_end;  // the keys any of the block's queries sees
  int64_t first[2];        // the first key each of the lane's rows sees
  int64_t last_row_first;  // the block's last row's (the tile-skipping corner)

  __device__ QueryBlock(int64_t T_, int64_t Q0_, int64_t H_, int64_t K_, int64_t window, const DocumentOffsets& docs)
      : T(T_), Tq(T_ - Q0_), Q0(Q0_), H(H_), K(K_), i0(Q0_ + int64_t(blockIdx.x) * kBlockRows), h(blockIdx.y),
        b(blockIdx.z), kv_head(h / (H_ / K_)), nq(min(int64_t(kBlockRows), T_ - i0)), lane(threadIdx.x % 32),
        g(lane / 4), t(lane % 4), row0(int(threadIdx.x / 32) * kRowsPerWarp) {
    const RowMask row_mask(T, window, docs, b);
    j_begin = row_mask.first_key(i0);
    j_end = i0 + nq;
    first[0] = row_mask.first_key(i0 + row0 + g);
    first[1] = row_mask.first_key(i0 + row0 + g + 8);
    last_row_first = row_mask.first_key(i0 + kBlockRows - 1);
  }
  // Batch b's rows of a query-side array (q, dout, out, dq: [B, Tq, H, D]) and of a key-side one (k, v: [B, T, K, D]).
  template <int D, typename X>
  __device__ X* query_rows(X* x) const { return x + b * Tq * H * D; }
  template <int D, typename X>
  __device__ X* key_rows(X* x) const { return x + b * T * K * D; }
  __device__ int64_t first_row() const { return i0 - Q0; }             // the block's first row in those arrays
  __device__ int64_t stats_at() const { return (b * H + h) * Tq + i0 - Q0; }  // and in lse, delta [B, H, Tq]
  __device__ int64_t keys(int64_t j0) const { return min(int64_t(kTile), j_end - j0); }  // of the tile from j0
  // Whether the tile of nk keys from j0 has pairs to mask, and whether row `row` sees column `col` of it (`half`:
  // which of the lane's rows it is).
  __device__ bool needs_mask(int64_t j0, int64_t nk) const {
    return attention_tiles::needs_mask(i0, nq, kBlockRows, j0, nk, kTile, j0 >= last_row_first);
  }
  __device__ bool visible(int row, int col, int64_t j0, int64_t nk, int half) const {
    return row < nq && col < nk && visible_from(i0 + row, j0 + col, first[half]);
  }
};

// The same for a dK/dV block of 64 keys (blockIdx: key tile × `splits` column slices, KV head, batch): its keys, the
// lane's two of them, the query tiles it visits (QueryTiles) and the end of the queries each key is seen by. The
// block accumulates head dims [col0, col0 + columns) of dK and dV (kDkDvSplits, kDkDvColumns).
struct KeyBlock {
  int64_t T, Tq, Q0, H, K, j0, kv_head, b, nk;
  int col0, lane, g, t, row0;  // row0: the warp's first key; the lane holds keys row0 + g and row0 + g + 8
  RowMask row_mask;
  QueryTiles tiles;
  int64_t query_end[2];   // the end of the queries that see each of the lane's keys
  int64_t first_key_end;  // the block's first key's (the tile-skipping corner)

  __device__ KeyBlock(int64_t T_, int64_t Q0_, int64_t H_, int64_t K_, int64_t window, const DocumentOffsets& docs,
                      int splits, int columns)
      : T(T_), Tq(T_ - Q0_), Q0(Q0_), H(H_), K(K_), j0(int64_t(blockIdx.x / splits) * kBlockRows), kv_head(blockIdx.y),
        b(blockIdx.z), nk(min(int64_t(kBlockRows), T_ - j0)), col0(int(blockIdx.x % splits) * columns),
        lane(threadIdx.x % 32), g(lane / 4), t(lane % 4), row0(int(threadIdx.x / 32) * kRowsPerWarp),
        row_mask(T_, window, docs, b), tiles(j0, nk, row_mask, kv_head, H_ / K_, Q0_),
        query_end{row_mask.query_end(j0 + row0 + g), row_mask.query_end(j0 + row0 + g + 8)},
        first_key_end(row_mask.query_end(j0)) {}
  template <int D, typename X>
  __device__ X* query_rows(X* x) const { return x + b * Tq * H * D; }
  template <int D, typename X>
  __device__ X* key_rows(X* x) const { return x + b * T * K * D; }
  __device__ int64_t stats_at(int64_t h, int64_t i0) const { return (b * H + h) * Tq + i0 - Q0; }  // lse, delta
  // Whether the query tile of nq queries from i0 has pairs to mask, and whether key `key` is seen by query `query`
  // of it (`half`: which of the lane's keys it is).
  __device__ bool needs_mask(int64_t i0, int64_t nq) const {
    return attention_tiles::needs_mask(i0, nq, kTile, j0, nk, kBlockRows, i0 + kTile - 1 < first_key_end);
  }
  __device__ bool visible(int key, int query, int64_t i0, int64_t nq, int half) const {
    return query < nq && key < nk && visible_until(i0 + query, j0 + key, query_end[half]);
  }
};

// A warp's A fragments (16 rows × 16 head dims each) of its rows of a row-major [64][ld_head<D>] tile (Q, dO): held
// in registers from hold() on when kRowsInRegisters<D>, else loaded from the tile on every use.
template <int D>
class RowFragments {
 public:
  __device__ RowFragments(const bf16_t* tile, int row0, int lane) : rows_(tile + row0 * ld_head<D>), lane_(lane) {}
  // Once the tile has landed.
  __device__ void hold() {
    if constexpr (kRowsInRegisters<D>) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) load_a(held_[kk], rows_ + kk * 16, ld_head<D>, lane_);
    }
  }
  // Fragment kk: the held one, or loaded into `scratch`.
  __device__ const uint32_t (&at(int kk, uint32_t (&scratch)[4]) const)[4] {
    if constexpr (kRowsInRegisters<D>) {
      return held_[kk];
    } else {
      load_a(scratch, rows_ + kk * 16, ld_head<D>, lane_);
      return scratch;
    }
  }

 private:
  const bf16_t* rows_;
  int lane_;
  uint32_t held_[kRowsInRegisters<D> ? D / 16 : 1][4];
};

// ---- The backward's probabilities ------------------------------------------------------------------------------

struct LseDelta {
  float lse, delta;  // of a query: its softmax's log-sum-exp and rowsum(dO ∘ O) (attention_delta)
};

// The masked step of every backward product loop, on a warp's N 8-column tiles of scores s and of dp, columns from
// col0 of the block's tile: s becomes P = exp(scale·S − lse) and dp becomes dS = P ∘ (dP − delta), both 0 where
// `visible(row, col, half)` is false (asked only when `mask`). lse and delta of an element come from
// `stats(half, col)`.
template <int N, typename Visible, typename Stats>
__device__ inline void masked_backward_scores(float (&s)[N][4], float (&dp)[N][4], bool mask, int col0, float scale,
                                              int row0, int g, int t, Visible&& visible, Stats&& stats) {
#pragma unroll
  for (int n = 0; n < N; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int row = row0 + g + 8 * (e / 2), col = col0 + n * 8 + 2 * t + e % 2;
      float p = 0.0f, ds = 0.0f;
      if (!mask || visible(row, col, e / 2)) {
        const LseDelta query = stats(e / 2, col);
        p = __expf(s[n][e] * scale - query.lse);
        ds = p * (dp[n][e] - query.delta);
      }
      s[n][e] = p;
      dp[n][e] = ds;
    }
}

// For a dQ block: rows are its queries, columns the keys of the tile of nk from j0; lse and delta of the lane's two
// rows.
template <int N>
__device__ inline void backward_scores(float (&s)[N][4], float (&dp)[N][4], const QueryBlock& block, bool mask,
                                       int64_t j0, int64_t nk, int col0, const float (&lse)[2],
                                       const float (&delta)[2], float scale) {
  masked_backward_scores(
      s, dp, mask, col0, scale, block.row0, block.g, block.t,
      [&](int row, int col, int half) { return block.visible(row, col, j0, nk, half); },
      [&](int half, int) { return LseDelta{lse[half], delta[half]}; });
}

// For a dK/dV block (Sᵀ and dPᵀ): rows are its keys, columns the queries of the tile of nq from i0, whose lse and
// delta are in shared memory.
template <int N>
__device__ inline void backward_scores(float (&st)[N][4], float (&dpt)[N][4], const KeyBlock& block, bool mask,
                                       int64_t i0, int64_t nq, int col0, const float* lse, const float* delta,
                                       float scale) {
  masked_backward_scores(
      st, dpt, mask, col0, scale, block.row0, block.g, block.t,
      [&](int key, int query, int half) { return block.visible(key, query, i0, nq, half); },
      [&](int, int query) { return LseDelta{lse[query], delta[query]}; });
}

// ---- The forward's online softmax ------------------------------------------------------------------------------

// One tile's step for a warp's rows g and g + 8, with s its scores against the tile's kTile keys from j0: scale,
// mask (QueryBlock::visible), the rows' new maxima m (over the quad of lanes holding a row), and the running sums l
// rescaled by how much the maxima grew. alpha receives that factor, for the output accumulators, and `base` what
// the probabilities subtract.
__device__ inline void softmax_maxima(float (&s)[kTile / 8][4], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                      float (&base)[2], const QueryBlock& block, bool mask, int64_t j0, int64_t nk,
                                      float scale) {
  const int row0 = block.row0, g = block.g, t = block.t;
  float row_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < kTile / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int row = row0 + g + 8 * (e / 2), col = n * 8 + 2 * t + e % 2;
      float x = s[n][e] * scale;
      if (mask && !block.visible(row, col, j0, nk, e / 2)) x = -INFINITY;
      s[n][e] = x;
      row_max[e / 2] = fmaxf(row_max[e / 2], x);
    }
    // A row that has seen no visible key yet keeps m = −inf; subtracting 0 instead keeps exp(−inf − (−inf)) =
    // NaN out.
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const float m_new = fmaxf(m[r], quad_max(row_max[r]));
    base[r] = m_new == -INFINITY ? 0.0f : m_new;
    alpha[r] = __expf(m[r] - base[r]);
    l[r] *= alpha[r];
    m[r] = m_new;
  }
}

// The output accumulators of the rows times alpha (softmax_maxima).
template <int D>
__device__ inline void rescale_rows(float (&o)[D / 8][4], const float (&alpha)[2]) {
#pragma unroll
  for (int r = 0; r < 2; r++)
#pragma unroll
    for (int dn = 0; dn < D / 8; dn++) {
      o[dn][2 * r] *= alpha[r];
      o[dn][2 * r + 1] *= alpha[r];
    }
}

// softmax_maxima, then O rescaled at once: the step of kernels with no product in flight on O.
template <int D>
__device__ inline void online_softmax(float (&s)[kTile / 8][4], float (&o)[D / 8][4], float (&m)[2], float (&l)[2],
                                      float (&base)[2], const QueryBlock& block, bool mask, int64_t j0, int64_t nk,
                                      float scale) {
  float alpha[2];
  softmax_maxima(s, m, l, alpha, base, block, mask, j0, nk, scale);
  rescale_rows<D>(o, alpha);
}

// The scores of softmax_maxima become their probabilities in place, in fp32, and join the running sums l in the
// order probabilities() adds them (so both give the same bits); pack_columns then makes P·V's A fragments.
__device__ inline void exponentiate(float (&s)[kTile / 8][4], const float (&base)[2], float (&l)[2]) {
#pragma unroll
  for (int n = 0; n < kTile / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      s[n][e] = __expf(s[n][e] - base[e / 2]);
      l[e / 2] += s[n][e];
    }
}

// The probabilities of keys [16j, 16j + 16) as the bf16 A fragment of P·V (the accumulators of n-tiles 2j and
// 2j + 1); their fp32 values, not the roundings, join the running sums l.
__device__ inline void probabilities(uint32_t (&pa)[4], const float (&s)[kTile / 8][4], int j, const float (&base)[2],
                                     float (&l)[2]) {
  float p[2][4];
#pragma unroll
  for (int half = 0; half < 2; half++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      p[half][e] = __expf(s[2 * j + half][e] - base[e / 2]);
      l[e / 2] += p[half][e];
    }
  pack_a(pa, p);
}

// The end of the forward for a warp's rows: O divided by the rows' sums, and lse = m + log(sum) of rows below
// nq written to lse_rows (the block's first row).
template <int D>
__device__ inline void finish_rows(float (&o)[D / 8][4], float* lse_rows, const float (&m)[2], const float (&l)[2],
                                   int64_t nq, int row0, int g, int t) {
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const float sum = quad_sum(l[r]), inv = 1.0f / sum;
#pragma unroll
    for (int dn = 0; dn < D / 8; dn++) {
      o[dn][2 * r] *= inv;
      o[dn][2 * r + 1] *= inv;
    }
    const int row = row0 + g + 8 * r;
    if (t == 0 && row < nq) lse_rows[row] = m[r] + logf(sum);
  }
}

// An fp32 array as bf16 (RNE, as replica::to_bf16), what every tile copy then reads: the caller's rounded copy when
// it has one (x.b16), else rounded once into stream-ordered scratch.
class Bf16Copy {
 public:
  Bf16Copy(Context& ctx, WeightRef x, int64_t n) : ctx_(ctx), rounded_(x.b16) {
    if (rounded_) return;
    owned_ = static_cast<bf16*>(ctx.allocate(size_t(n) * sizeof(bf16)));
    convert_to_bf16(ctx, x.f32, owned_, n);
    rounded_ = owned_;
  }
  ~Bf16Copy() {
    if (owned_) ctx_.release(owned_);
  }
  Bf16Copy(const Bf16Copy&) = delete;
  Bf16Copy& operator=(const Bf16Copy&) = delete;
  const bf16_t* get() const { return reinterpret_cast<const bf16_t*>(rounded_); }

 private:
  Context& ctx_;
  bf16* owned_ = nullptr;  // the scratch copy, when the caller had none
  const bf16* rounded_;
};

// What a forward launch reads: q, k, v in bf16, one block per 64 queries (of the s.rows_q() a row holds), head and
// batch, and the softmax scale.
struct ForwardOperands {
  Bf16Copy q, k, v;
  dim3 grid;
  float scale;
  ForwardOperands(Context& ctx, WeightRef q_, WeightRef k_, WeightRef v_, const AttentionShape& s)
      : q(ctx, q_, s.B * s.rows_q() * s.H * s.D),
        k(ctx, k_, s.B * s.T * s.K * s.D),
        v(ctx, v_, s.B * s.T * s.K * s.D),
        grid(unsigned(ceil_div(s.rows_q(), kBlockRows)), unsigned(s.H), unsigned(s.B)),
        scale(softmax_scale(s)) {}
};

// What a backward launch reads: delta (attention_delta), q, k, v and dout in bf16, the grids of the dK/dV pass
// (64 keys of all T, KV head, batch) and of the dQ pass (64 of the row's queries, head, batch), and the scale.
struct BackwardOperands {
  Scratch<float> delta;
  Bf16Copy q, k, v, dout;
  dim3 kv_grid, q_grid;
  float scale;
  // The dK/dV grid for kernels whose blocks take D / splits head dims each (kDkDvSplits): splits per key tile.
  dim3 key_grid(int splits) const { return dim3(kv_grid.x * unsigned(splits), kv_grid.y, kv_grid.z); }
  BackwardOperands(Context& ctx, const float* dout_, const float* out, WeightRef q_, WeightRef k_, WeightRef v_,
                   const AttentionShape& s)
      : delta(ctx, size_t(s.B * s.H * s.rows_q())),
        q(ctx, q_, s.B * s.rows_q() * s.H * s.D),
        k(ctx, k_, s.B * s.T * s.K * s.D),
        v(ctx, v_, s.B * s.T * s.K * s.D),
        dout(ctx, dout_, s.B * s.rows_q() * s.H * s.D),
        kv_grid(unsigned(ceil_div(s.T, kBlockRows)), unsigned(s.K), unsigned(s.B)),
        q_grid(unsigned(ceil_div(s.rows_q(), kBlockRows)), unsigned(s.H), unsigned(s.B)),
        scale(softmax_scale(s)) {
    attention_delta(ctx, delta.get(), dout_, out, s);
  }
};

}  // namespace replica::cuda::attention_tiles
