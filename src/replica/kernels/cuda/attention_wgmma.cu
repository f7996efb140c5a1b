// Attention on Hopper's warpgroup products (wgmma.cuh): the mma.sync kernels' algorithms (attention_mma.cu:
// blocks of 64 queries or keys, one warp per 16 rows, softmax on the accumulators, P and dS repacked as A
// fragments, the deterministic two-pass backward) with every product issued by the whole block as one warpgroup
// and its B operand read by the tensor cores straight from shared memory. The mma.sync kernels load every B
// fragment through the warp's registers (one 512-byte ldmatrix per two products), which bounds them by
// shared-memory bandwidth; here no thread reads a tile after copying it in, except Q and dO into registers once.
// Same contract, arguments, rounding points and outputs as the mma.sync pair, and interchangeable with it. Head
// dims 64 and 128 on an sm_90 GPU (the products are 64 columns wide); everything else takes the mma.sync kernels.
//
//   forward  per visible tile of 64 keys: S = Q·Kᵀ (A = Q's fragments, B = K, K-major), online softmax,
//            O += P·V (A = P repacked, B = V, MN-major; 64 head dims a product)
//   dK, dV   per query tile: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (A = K, V and B = Q, dO, all from shared memory),
//            dV += Pᵀ·dO and dK += dSᵀ·Q (A = Pᵀ, dSᵀ repacked; B = dO, Q, MN-major)
//   dQ       per key tile: S = Q·Kᵀ and dP = dO·Vᵀ (A = Q's and dO's fragments), dQ += dS·K (B = K, MN-major)
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/attention_fragments.cuh"
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/core_tile_fill.cuh"

namespace replica::cuda {

namespace {

using namespace attention_tiles;

// Tiles as wgmma reads them (K and V; Q and dO in dK/dV): core matrices of 8 tokens × 8 head dims (128
// contiguous bytes, a token's 8 values per 16-byte row), the D / 8 core matrices of 8 tokens one after the other,
// then the next 8 tokens.
template <int D>
constexpr size_t kCoreTileBytes = size_t(kTile) * D * 2;
template <int D>
constexpr uint32_t kTokenGroupBytes = D * 16;  // from one 8-token group to the next
constexpr uint32_t kCoreMatrixBytes = 128;     // from one 8-dim group to the next

// Shared memory: Q (row-major, padded as the mma.sync kernels keep it: read into registers once), then K and V of
// stage 0, then of stage 1.
template <int D>
constexpr size_t kWgmmaForwardBytes = kTileBytes<D> + 4 * kCoreTileBytes<D>;

template <int D>
__device__ inline bf16_t* core_tile_at(unsigned char* smem, int index) {
  return reinterpret_cast<bf16_t*>(smem + kTileBytes<D> + index * kCoreTileBytes<D>);
}

// Starts copying rows [t0, t0 + n) of head `head` of x [T, heads, D] (bf16, offset to the batch) into a tile of
// core matrices, 16 bytes (8 dims of a token) per cp.async, in core_tile_fill.cuh's conflict-free order; rows ≥ n
// are zeroed. The caller commits the group.
template <int D>
__device__ void copy_core_rows_async(bf16_t* tile, const bf16_t* x, int64_t t0, int64_t n, int64_t heads,
                                     int64_t head) {
  for (int e = threadIdx.x; e < kTile * (D / 8); e += kThreads) {
    const CorePiece p = core_piece<D>(e);
    const int r = p.token;
    bf16_t* dst = tile + core_piece_offset<D>(p);
    if (r < n) {
      cp_async_16(dst, x + ((t0 + r) * heads + head) * D + p.piece * 8);
    } else {
      *reinterpret_cast<float4*>(dst) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
}

// Eight consecutive 16 × 8 accumulator tiles of a warp (64 columns) as one wgmma operand: the same 32 floats.
__device__ inline float (&wgmma_tiles(float (*tiles)[4]))[32] { return *reinterpret_cast<float(*)[32]>(tiles); }

template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_forward_wgmma_kernel(float* out, float* lse, const bf16_t* q, const bf16_t* k, const bf16_t* v, int64_t T,
                                   int64_t Q0, int64_t H, int64_t K, int64_t window, DocumentOffsets docs,
                                   float scale) {
  static_assert(D % 64 == 0 && kTile == 64, "the products are m64n64k16");
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Qs = tile_at<D>(smem, 0);

  // Positions are key positions; the row's queries are [Q0, T), held from 0 in q, out, lse (Tq of them).
  const int64_t Tq = T - Q0, i0 = Q0 + int64_t(blockIdx.x) * kBlockRows, h = blockIdx.y, b = blockIdx.z;
  const int64_t kv_head = h / (H / K), nq = min(int64_t(kBlockRows), T - i0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = warp * kRowsPerWarp;  // the warp's rows in the block, as in the warpgroup's products
  const bf16_t* kb = k + b * T * K * D;
  const bf16_t* vb = v + b * T * K * D;
  const RowMask row_mask(T, window, docs, b);
  const int64_t j_begin = row_mask.first_key(i0), j_end = i0 + nq;  // the keys any of the block's queries sees
  // The first key each of this lane's rows sees, and the block's last row's (the tile-skipping corner).
  const int64_t first[2] = {row_mask.first_key(i0 + row0 + g), row_mask.first_key(i0 + row0 + g + 8)};
  const int64_t last_row_first = row_mask.first_key(i0 + kBlockRows - 1);
  // Starts fetching keys [j, j + n) of K and V into `stage`.
  auto fetch = [&](int64_t j, int64_t n, int stage) {
    copy_core_rows_async<D>(core_tile_at<D>(smem, 2 * stage), kb, j, n, K, kv_head);
    copy_core_rows_async<D>(core_tile_at<D>(smem, 2 * stage + 1), vb, j, n, K, kv_head);
  };

  copy_rows_async<D>(Qs, q + b * Tq * H * D, i0 - Q0, nq, H, h);
  fetch(j_begin, min(int64_t(kTile), j_end - j_begin), 0);
  cp_async_commit();

  uint32_t qa[D / 16][4];
  float o[D / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  int stage = 0;
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = min(int64_t(kTile), j_end - j0), j_next = j0 + kTile;
    advance_pipeline<true>(j_next < j_end, [&] { fetch(j_next, min(int64_t(kTile), j_end - j_next), stage ^ 1); });
    const bf16_t* Ks = core_tile_at<D>(smem, 2 * stage);
    const bf16_t* Vs = core_tile_at<D>(smem, 2 * stage + 1);
    if (j0 == j_begin) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) load_a(qa[kk], Qs + row0 * ldh + kk * 16, ldh, lane);
    }

    // S = Q·Kᵀ: B(k = d, n = key) is K-major, 16 dims (two core matrices) per product.
    float s[kTile / 8][4] = {};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
      wgmma_m64n64k16<false>(wgmma_tiles(s), qa[kk],
                             smem_descriptor(Ks + kk * 2 * 64, kCoreMatrixBytes, kTokenGroupBytes<D>), kk > 0);
    wgmma_commit();
    wgmma_wait<0>();

    float base[2];
    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kTile, j0 >= last_row_first);
    online_softmax<D>(s, o, m, l, base, mask, i0, nq, j0, nk, first, scale, row0, g, t);

    // O += P·V: B(k = key, n = d) is MN-major, 16 keys (two 8-token groups) by 64 dims per product.
    uint32_t pa[kTile / 16][4];
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) probabilities(pa[j], s, j, base, l);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kTile / 16; j++)
#pragma unroll
      for (int half = 0; half < D / 64; half++)
        wgmma_m64n64k16<true>(
            wgmma_tiles(o + 8 * half), pa[j],
            smem_descriptor(Vs + (2 * j * (D / 8) + 8 * half) * 64, kTokenGroupBytes<D>, kCoreMatrixBytes), true);
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  finish_rows<D>(o, lse + (b * H + h) * Tq + i0 - Q0, m, l, nq, row0, g, t);
  store_rows<D>(out + b * Tq * H * D, o, 1.0f, i0 - Q0, row0, nq, H, h, g, t);
}

// ---- Backward -----------------------------------------------------------------------------------------------

// The descriptors of a core tile at `tile` for 16 of its columns (head dims [16kk, 16kk + 16)) as a K-major
// operand, and for 16 of its rows (tokens [16j, 16j + 16)) by 64 head dims [64·half, 64·half + 64) as an MN-major
// one.
template <int D>
__device__ inline uint64_t k_major(const bf16_t* tile, int kk) {
  return smem_descriptor(tile + kk * 2 * 64, kCoreMatrixBytes, kTokenGroupBytes<D>);
}
template <int D>
__device__ inline uint64_t mn_major(const bf16_t* tile, int j, int half) {
  return smem_descriptor(tile + (2 * j * (D / 8) + 8 * half) * 64, kTokenGroupBytes<D>, kCoreMatrixBytes);
}

// Shared memory: K and V (core tiles, A of Sᵀ and dPᵀ), then Q and dO of stage 0 and stage 1 (core tiles, B of
// all four products), then lse and delta of stage 0 and stage 1.
template <int D>
constexpr size_t kWgmmaDkDvBytes = 6 * kCoreTileBytes<D> + 2 * 2 * kTile * sizeof(float);

// attention_dkdv_mma_kernel's work on warpgroup products: per query tile, Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ with both
// operands in shared memory, Pᵀ and dSᵀ in registers, then dV += Pᵀ·dO and dK += dSᵀ·Q with Pᵀ and dSᵀ repacked
// as A and dO, Q as MN-major B.
template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_dkdv_wgmma_kernel(float* dk, float* dv, const bf16_t* dout, const float* lse, const float* delta,
                                const bf16_t* q, const bf16_t* k, const bf16_t* v, int64_t T, int64_t Q0, int64_t H,
                                int64_t K, int64_t window, DocumentOffsets docs, float scale) {
  unsigned char* smem = dynamic_shared_memory();
  auto core = [&](int index) { return reinterpret_cast<bf16_t*>(smem + index * kCoreTileBytes<D>); };
  float* stats = reinterpret_cast<float*>(smem + 6 * kCoreTileBytes<D>);  // [stage][lse, delta][kTile]

  const int64_t Tq = T - Q0, j0 = int64_t(blockIdx.x) * kBlockRows, kv_head = blockIdx.y, b = blockIdx.z;
  const int64_t group = H / K, nk = min(int64_t(kBlockRows), T - j0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = warp * kRowsPerWarp;  // the warp's keys in the block
  const bf16_t* qb = q + b * Tq * H * D;
  const bf16_t* dob = dout + b * Tq * H * D;
  const RowMask row_mask(T, window, docs, b);
  const QueryTiles tiles(j0, nk, row_mask, kv_head, group, Q0);
  // The end of the queries that see each of this lane's keys, and the block's first key's (the tile-skipping
  // corner).
  const int64_t query_end[2] = {row_mask.query_end(j0 + row0 + g), row_mask.query_end(j0 + row0 + g + 8)};
  const int64_t first_key_end = row_mask.query_end(j0);
  auto fetch = [&](int64_t index, int stage) {  // query tile `index` (Q, dO, lse, delta) into `stage`
    const int64_t h = tiles.head(index), i0 = tiles.first_query(index), nq = tiles.rows(index);
    copy_core_rows_async<D>(core(2 + 2 * stage), qb, i0 - Q0, nq, H, h);
    copy_core_rows_async<D>(core(3 + 2 * stage), dob, i0 - Q0, nq, H, h);
    float* lse_s = stats + 2 * kTile * stage;
    load_row_stats(lse_s, lse_s + kTile, kTile, lse, delta, (b * H + h) * Tq + i0 - Q0, nq);
  };

  copy_core_rows_async<D>(core(0), k + b * T * K * D, j0, nk, K, kv_head);
  copy_core_rows_async<D>(core(1), v + b * T * K * D, j0, nk, K, kv_head);
  if (tiles.count > 0) fetch(0, 0);  // keys no query sees (before a query slice, say) visit no tile: dK = dV = 0
  cp_async_commit();
  float dk_acc[D / 8][4] = {}, dv_acc[D / 8][4] = {};

  int stage = 0;
  for (int64_t index = 0; index < tiles.count; index++, stage ^= 1) {
    advance_pipeline<true>(index + 1 < tiles.count, [&] { fetch(index + 1, stage ^ 1); });
    const int64_t i0 = tiles.first_query(index), nq = tiles.rows(index);
    const bf16_t* Qs = core(2 + 2 * stage);
    const bf16_t* dOs = core(3 + 2 * stage);
    const float* lse_s = stats + 2 * kTile * stage;
    const float* delta_s = lse_s + kTile;

    // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ: rows are the block's keys, columns the tile's queries.
    float st[kTile / 8][4] = {}, dpt[kTile / 8][4] = {};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
      wgmma_m64n64k16_ss(wgmma_tiles(st), k_major<D>(core(0), kk), k_major<D>(Qs, kk), kk > 0);
      wgmma_m64n64k16_ss(wgmma_tiles(dpt), k_major<D>(core(1), kk), k_major<D>(dOs, kk), kk > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();

    // Pᵀ = exp(scale·Sᵀ − lse) and dSᵀ = Pᵀ ∘ (dPᵀ − delta), zero where masked (row: key, column: query).
    const bool mask = needs_mask(i0, nq, kTile, j0, nk, kBlockRows, i0 + kTile - 1 < first_key_end);
#pragma unroll
    for (int n = 0; n < kTile / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int key = row0 + g + 8 * (e / 2), col = n * 8 + 2 * t + e % 2;
        float p = 0.0f, ds = 0.0f;
        if (!mask || (col < nq && key < nk && visible_until(i0 + col, j0 + key, query_end[e / 2]))) {
          p = __expf(st[n][e] * scale - lse_s[col]);
          ds = p * (dpt[n][e] - delta_s[col]);
        }
        st[n][e] = p;
        dpt[n][e] = ds;
      }
    // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end), 16 queries at a time.
    uint32_t pa[kTile / 16][4], dsa[kTile / 16][4];
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) {
      pack_columns(pa[j], st, j);
      pack_columns(dsa[j], dpt, j);
    }
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kTile / 16; j++)
#pragma unroll
      for (int half = 0; half < D / 64; half++) {
        wgmma_m64n64k16<true>(wgmma_tiles(dv_acc + 8 * half), pa[j], mn_major<D>(dOs, j, half), true);
        wgmma_m64n64k16<true>(wgmma_tiles(dk_acc + 8 * half), dsa[j], mn_major<D>(Qs, j, half), true);
      }
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  store_rows<D>(dk + b * T * K * D, dk_acc, scale, j0, row0, nk, K, kv_head, g, t);
  store_rows<D>(dv + b * T * K * D, dv_acc, 1.0f, j0, row0, nk, K, kv_head, g, t);
}

// Shared memory: Q and dO (row-major, read into registers once), then K and V of stage 0 and stage 1 (core
// tiles).
template <int D>
constexpr size_t kWgmmaDqBytes = 2 * kTileBytes<D> + 4 * kCoreTileBytes<D>;

// attention_dq_mma_kernel's work on warpgroup products: per key tile, S = Q·Kᵀ and dP = dO·Vᵀ with Q and dO as A
// from registers, dS in registers, then dQ += dS·K with K as MN-major B.
template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_dq_wgmma_kernel(float* dq, const bf16_t* dout, const float* lse, const float* delta, const bf16_t* q,
                              const bf16_t* k, const bf16_t* v, int64_t T, int64_t Q0, int64_t H, int64_t K,
                              int64_t window, DocumentOffsets docs, float scale) {
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  const bf16_t* Qs = tile_at<D>(smem, 0);
  const bf16_t* dOs = tile_at<D>(smem, 1);
  auto core = [&](int index) {
    return reinterpret_cast<bf16_t*>(smem + 2 * kTileBytes<D> + index * kCoreTileBytes<D>);
  };

  // Positions are key positions; the row's queries are [Q0, T), held from 0 in q, out, lse (Tq of them).
  const int64_t Tq = T - Q0, i0 = Q0 + int64_t(blockIdx.x) * kBlockRows, h = blockIdx.y, b = blockIdx.z;
  const int64_t kv_head = h / (H / K), nq = min(int64_t(kBlockRows), T - i0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = warp * kRowsPerWarp;
  const bf16_t* kb = k + b * T * K * D;
  const bf16_t* vb = v + b * T * K * D;
  const RowMask row_mask(T, window, docs, b);
  const int64_t j_begin = row_mask.first_key(i0), j_end = i0 + nq;  // the keys any of the block's queries sees
  // The first key each of this lane's rows sees, and the block's last row's (the tile-skipping corner).
  const int64_t first[2] = {row_mask.first_key(i0 + row0 + g), row_mask.first_key(i0 + row0 + g + 8)};
  const int64_t last_row_first = row_mask.first_key(i0 + kBlockRows - 1);
  auto fetch = [&](int64_t j, int64_t n, int stage) {  // keys [j, j + n) of K and V into `stage`
    copy_core_rows_async<D>(core(2 * stage), kb, j, n, K, kv_head);
    copy_core_rows_async<D>(core(2 * stage + 1), vb, j, n, K, kv_head);
  };

  copy_rows_async<D>(tile_at<D>(smem, 0), q + b * Tq * H * D, i0 - Q0, nq, H, h);
  copy_rows_async<D>(tile_at<D>(smem, 1), dout + b * Tq * H * D, i0 - Q0, nq, H, h);
  fetch(j_begin, min(int64_t(kTile), j_end - j_begin), 0);
  cp_async_commit();
  float row_lse[2], row_delta[2];
  row_stats(row_lse, row_delta, lse, delta, (b * H + h) * Tq + i0 - Q0, nq, row0, g);
  uint32_t qa[D / 16][4], doa[D / 16][4];
  float dq_acc[D / 8][4] = {};

  int stage = 0;
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = min(int64_t(kTile), j_end - j0), j_next = j0 + kTile;
    advance_pipeline<true>(j_next < j_end, [&] { fetch(j_next, min(int64_t(kTile), j_end - j_next), stage ^ 1); });
    const bf16_t* Ks = core(2 * stage);
    const bf16_t* Vs = core(2 * stage + 1);
    if (j0 == j_begin) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        load_a(qa[kk], Qs + row0 * ldh + kk * 16, ldh, lane);
        load_a(doa[kk], dOs + row0 * ldh + kk * 16, ldh, lane);
      }
    }

    // S = Q·Kᵀ and dP = dO·Vᵀ: B(k = d, n = key) is K-major.
    float s[kTile / 8][4] = {}, dp[kTile / 8][4] = {};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
      wgmma_m64n64k16<false>(wgmma_tiles(s), qa[kk], k_major<D>(Ks, kk), kk > 0);
      wgmma_m64n64k16<false>(wgmma_tiles(dp), doa[kk], k_major<D>(Vs, kk), kk > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();

    // dS = P ∘ (dP − delta) with P = exp(scale·S − lse), zero where masked.
    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kTile, j0 >= last_row_first);
#pragma unroll
    for (int n = 0; n < kTile / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int row = row0 + g + 8 * (e / 2), col = n * 8 + 2 * t + e % 2;
        float ds = 0.0f;
        if (!mask || (row < nq && col < nk && visible_from(i0 + row, j0 + col, first[e / 2]))) {
          const float p = __expf(s[n][e] * scale - row_lse[e / 2]);
          ds = p * (dp[n][e] - row_delta[e / 2]);
        }
        dp[n][e] = ds;
      }
    // dQ += dS·K (scaled at the end), 16 keys at a time: B(k = key, n = d) is MN-major.
    uint32_t dsa[kTile / 16][4];
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) pack_columns(dsa[j], dp, j);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kTile / 16; j++)
#pragma unroll
      for (int half = 0; half < D / 64; half++)
        wgmma_m64n64k16<true>(wgmma_tiles(dq_acc + 8 * half), dsa[j], mn_major<D>(Ks, j, half), true);
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  store_rows<D>(dq + b * Tq * H * D, dq_acc, scale, i0 - Q0, row0, nq, H, h, g, t);
}

// True on an sm_90 GPU (the sm_90a machine code; other GPUs, and the portable PTX, have no wgmma).
bool hopper(Context& ctx) {
  static const bool is_hopper = [&] {
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, ctx.device()), "cudaGetDeviceProperties");
    return prop.major == 9 && prop.minor == 0;
  }();
  return is_hopper;
}

}  // namespace

void attention_forward_wgmma(Context& ctx, float* out, float* lse, WeightRef q, WeightRef k, WeightRef v,
                             const AttentionShape& s, const DocumentOffsets& docs) {
  if (!hopper(ctx) || (s.D != 64 && s.D != 128)) return attention_forward_mma(ctx, out, lse, q, k, v, s, docs);
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}})) return;
  const ForwardOperands in(ctx, q, k, v, s);
  auto run = [&](auto kernel, size_t bytes) {
    launch("attention_forward_wgmma", kernel, in.grid, kThreads, bytes, ctx.stream(), out, lse, in.q.get(), in.k.get(),
           in.v.get(), s.T, s.q_offset(), s.H, s.K, s.window, docs, in.scale);
  };
  if (s.D == 64) {
    static const size_t bytes =
        prepare_kernel(attention_forward_wgmma_kernel<64>, kWgmmaForwardBytes<64>, "attention_forward_wgmma");
    run(attention_forward_wgmma_kernel<64>, bytes);
  } else {
    static const size_t bytes =
        prepare_kernel(attention_forward_wgmma_kernel<128>, kWgmmaForwardBytes<128>, "attention_forward_wgmma");
    run(attention_forward_wgmma_kernel<128>, bytes);
  }
}

void attention_backward_wgmma(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                              const float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                              const DocumentOffsets& docs) {
  if (!hopper(ctx) || (s.D != 64 && s.D != 128))
    return attention_backward_mma(ctx, dq, dk, dv, dout, out, lse, q, k, v, s, docs);
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}, {dout, "dout"}})) return;
  const BackwardOperands in(ctx, dout, out, q, k, v, s);
  auto run = [&](auto dkdv_kernel, size_t dkdv_bytes, auto dq_kernel, size_t dq_bytes) {
    launch("attention_dkdv_wgmma", dkdv_kernel, in.kv_grid, kThreads, dkdv_bytes, ctx.stream(), dk, dv,
           in.dout.get(), lse, in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K,
           s.window, docs, in.scale);
    launch("attention_dq_wgmma", dq_kernel, in.q_grid, kThreads, dq_bytes, ctx.stream(), dq, in.dout.get(), lse,
           in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K, s.window, docs, in.scale);
  };
  if (s.D == 64) {
    static const size_t dkdv =
        prepare_kernel(attention_dkdv_wgmma_kernel<64>, kWgmmaDkDvBytes<64>, "attention_dkdv_wgmma");
    static const size_t dq = prepare_kernel(attention_dq_wgmma_kernel<64>, kWgmmaDqBytes<64>, "attention_dq_wgmma");
    run(attention_dkdv_wgmma_kernel<64>, dkdv, attention_dq_wgmma_kernel<64>, dq);
  } else {
    static const size_t dkdv =
        prepare_kernel(attention_dkdv_wgmma_kernel<128>, kWgmmaDkDvBytes<128>, "attention_dkdv_wgmma");
    static const size_t dq = prepare_kernel(attention_dq_wgmma_kernel<128>, kWgmmaDqBytes<128>, "attention_dq_wgmma");
    run(attention_dkdv_wgmma_kernel<128>, dkdv, attention_dq_wgmma_kernel<128>, dq);
  }
}

}  // namespace replica::cuda
