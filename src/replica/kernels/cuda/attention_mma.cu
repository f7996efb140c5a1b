// Flash attention with bf16 operands on tensor cores through mma.sync (mma.cuh), FlashAttention-2 style:
// every warp owns 16 rows and keeps their scores, probabilities and accumulators in registers, where the
// fragment layout is documented, so a tile costs no shared-memory round trip (wmma's layout is unspecified, so
// wmma kernels must stage S, P and dS in shared memory). Same contract as attention_forward / attention_backward
// (attention.h), with bf16 operands, and the fp32 kernels' deterministic two-pass backward. An accumulator pair of 8-column tiles is one bf16 A fragment of the next product.
//
// Data movement, the part that decides the speed: q, k, v (and dout) are rounded to bf16 once, into scratch
// (the same RNE rounding the contract names, so the same bits enter the products); every tile is then a plain
// [64][D] row-major bf16 copy, fetched by cp.async into one of two stages while the other stage is multiplied;
// fragments come out of shared memory by ldmatrix, transposed (ldmatrix .trans) where a product reduces along
// a tile's rows, so no tile is ever stored transposed.
//
//   forward  block (64 queries, head, batch); per visible tile of 64 keys:
//            S = Q·Kᵀ (Q fragments in registers), mask, online softmax on the accumulators (row max and sum
//            over the quad of lanes holding a row), O rescaled in registers, O += P·V
//   dK, dV   block (64 keys, KV head, batch); for the group's query heads, then the visible tiles of 64 queries,
//            16 at a time: Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ, dV += Pᵀ·dO, dK += dSᵀ·Q
//   dQ       block (64 queries, head, batch); per visible tile of 64 keys, 16 at a time: S = Q·Kᵀ,
//            dP = dO·Vᵀ (Q, dO fragments in registers), dQ += dS·K
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/attention_fragments.cuh"
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

namespace {

using namespace attention_tiles;

// ---- Forward ------------------------------------------------------------------------------------------------

// Shared memory: Q (read into registers once), then K and V of stage 0, then of stage 1.
template <int D>
constexpr size_t kForwardBytes = 5 * kTileBytes<D>;

template <int D>
__global__ void __launch_bounds__(kThreads) attention_forward_mma_kernel(float* out, float* lse, const bf16_t* q,
                                                                         const bf16_t* k, const bf16_t* v, int64_t T,
                                                                         int64_t Q0, int64_t H, int64_t K,
                                                                         int64_t window, DocumentOffsets docs,
                                                                         float scale) {
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Qs = tile_at<D>(smem, 0);

  // Positions are key positions; the row's queries are [Q0, T), held from 0 in q, out, lse (Tq of them).
  const int64_t Tq = T - Q0, i0 = Q0 + int64_t(blockIdx.x) * kBlockRows, h = blockIdx.y, b = blockIdx.z;
  const int64_t kv_head = h / (H / K), nq = min(int64_t(kBlockRows), T - i0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = warp * kRowsPerWarp;  // the warp's rows in the block: row0 + g and row0 + g + 8 for this lane
  const bf16_t* kb = k + b * T * K * D;
  const bf16_t* vb = v + b * T * K * D;
  const RowMask row_mask(T, window, docs, b);
  const int64_t j_begin = row_mask.first_key(i0), j_end = i0 + nq;  // the keys any of the block's queries sees
  // The first key each of this lane's rows sees, and the block's last row's (the tile-skipping corner).
  const int64_t first[2] = {row_mask.first_key(i0 + row0 + g), row_mask.first_key(i0 + row0 + g + 8)};
  const int64_t last_row_first = row_mask.first_key(i0 + kBlockRows - 1);

  copy_rows_async<D>(Qs, q + b * Tq * H * D, i0 - Q0, nq, H, h);
  copy_keys_async<D>(smem, 1, kb, vb, j_begin, min(int64_t(kTile), j_end - j_begin), K, kv_head);
  cp_async_commit();

  uint32_t qa[D / 16][4];
  float o[D / 8][4] = {};
  // Rows g and g + 8: running max (the same on the quad's lanes) and this lane's part of the running sum.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  int stage = 0;
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = min(int64_t(kTile), j_end - j0), j_next = j0 + kTile;
    advance_pipeline(j_next < j_end, [&] {
      copy_keys_async<D>(smem, 1 + 2 * (stage ^ 1), kb, vb, j_next, min(int64_t(kTile), j_end - j_next), K, kv_head);
    });
    const bf16_t* Ks = tile_at<D>(smem, 1 + 2 * stage);
    const bf16_t* Vs = tile_at<D>(smem, 2 + 2 * stage);
    if (j0 == j_begin) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) load_a(qa[kk], Qs + row0 * ldh + kk * 16, ldh, lane);
    }

    // S = Q·Kᵀ: B(k = d, n = key) is K's rows as stored.
    float s[kTile / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
      for (int n = 0; n < kTile / 16; n++) {
        uint32_t kf[4];
        load_b_rows(kf, Ks + n * 16 * ldh + kk * 16, ldh, lane);
        mma_pair(s[2 * n], s[2 * n + 1], qa[kk], kf);
      }

    // Online softmax: scale, mask, the rows' new maxima, and O rescaled by how much they grew.
    float base[2];
    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kTile, j0 >= last_row_first);
    online_softmax<D>(s, o, m, l, base, mask, i0, nq, j0, nk, first, scale, row0, g, t);

    // P·V, 16 keys at a time: n-tiles 2j and 2j + 1 of P are the A fragment of keys [16j, 16j + 16), and
    // B(k = key, n = d) is V's rows as stored.
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) {
      uint32_t pa[4];
      probabilities(pa, s, j, base, l);
#pragma unroll
      for (int dn = 0; dn < D / 16; dn++) {
        uint32_t vf[4];
        load_b_columns(vf, Vs + j * 16 * ldh + dn * 16, ldh, lane);
        mma_pair(o[2 * dn], o[2 * dn + 1], pa, vf);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  finish_rows<D>(o, lse + (b * H + h) * Tq + i0 - Q0, m, l, nq, row0, g, t);
  store_rows<D>(out + b * Tq * H * D, o, 1.0f, i0 - Q0, row0, nq, H, h, g, t);
}

// ---- Backward -----------------------------------------------------------------------------------------------

// Shared memory: K, V; then Q and dO of stage 0, of stage 1; then lse and delta of stage 0, of stage 1.
template <int D>
constexpr size_t kDkDvBytes = 6 * kTileBytes<D> + 2 * 2 * kTile * sizeof(float);

// One block per (64 keys, KV head, batch); warp w owns keys 16w … 16w + 15 and their dK, dV accumulators, over
// the query tiles that see the block's keys (QueryTiles).
template <int D>
__global__ void __launch_bounds__(kThreads) attention_dkdv_mma_kernel(float* dk, float* dv, const bf16_t* dout,
                                                                      const float* lse, const float* delta,
                                                                      const bf16_t* q, const bf16_t* k,
                                                                      const bf16_t* v, int64_t T, int64_t Q0,
                                                                      int64_t H, int64_t K, int64_t window,
                                                                      DocumentOffsets docs, float scale) {
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  const bf16_t* Ks = tile_at<D>(smem, 0);
  const bf16_t* Vs = tile_at<D>(smem, 1);
  float* stats = reinterpret_cast<float*>(smem + 6 * kTileBytes<D>);  // [stage][lse, delta][kTile]

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
  // Starts fetching query tile `index` (Q, dO and their rows' lse and delta) into `stage`.
  auto fetch = [&](int64_t index, int stage) {
    const int64_t h = tiles.head(index), i0 = tiles.first_query(index), nq = tiles.rows(index);
    copy_rows_async<D>(tile_at<D>(smem, 2 + 2 * stage), qb, i0 - Q0, nq, H, h);
    copy_rows_async<D>(tile_at<D>(smem, 3 + 2 * stage), dob, i0 - Q0, nq, H, h);
    float* lse_s = stats + 2 * kTile * stage;
    load_row_stats(lse_s, lse_s + kTile, kTile, lse, delta, (b * H + h) * Tq + i0 - Q0, nq);
  };

  copy_keys_async<D>(smem, 0, k + b * T * K * D, v + b * T * K * D, j0, nk, K, kv_head);
  if (tiles.count > 0) fetch(0, 0);  // keys no query sees (before a query slice, say) visit no tile: dK = dV = 0
  cp_async_commit();
  float dk_acc[D / 8][4] = {}, dv_acc[D / 8][4] = {};

  int stage = 0;
  for (int64_t index = 0; index < tiles.count; index++, stage ^= 1) {
    advance_pipeline(index + 1 < tiles.count, [&] { fetch(index + 1, stage ^ 1); });
    const int64_t i0 = tiles.first_query(index), nq = tiles.rows(index);
    const bf16_t* Qs = tile_at<D>(smem, 2 + 2 * stage);
    const bf16_t* dOs = tile_at<D>(smem, 3 + 2 * stage);
    const float* lse_s = stats + 2 * kTile * stage;
    const float* delta_s = lse_s + kTile;

    const bool mask = needs_mask(i0, nq, kTile, j0, nk, kBlockRows, i0 + kTile - 1 < first_key_end);
#pragma unroll
    for (int c = 0; c < kTile / 16; c++) {  // 16 queries at a time
      // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ: the warp's 16 keys × 16 queries (two 8-query tiles); B(k = d, n = query)
      // is Q's and dO's rows as stored.
      float st[2][4] = {}, dpt[2][4] = {};
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        uint32_t ka[4], va[4], qf[4], dof[4];
        load_a(ka, Ks + row0 * ldh + kk * 16, ldh, lane);
        load_a(va, Vs + row0 * ldh + kk * 16, ldh, lane);
        load_b_rows(qf, Qs + c * 16 * ldh + kk * 16, ldh, lane);
        load_b_rows(dof, dOs + c * 16 * ldh + kk * 16, ldh, lane);
        mma_pair(st[0], st[1], ka, qf);
        mma_pair(dpt[0], dpt[1], va, dof);
      }
      // Pᵀ = exp(scale·Sᵀ − lse) and dSᵀ = Pᵀ ∘ (dPᵀ − delta), zero where masked (row: key, column: query).
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = row0 + g + 8 * (e / 2), col = c * 16 + half * 8 + 2 * t + e % 2;
          float p = 0.0f, ds = 0.0f;
          if (!mask || (col < nq && key < nk && visible_until(i0 + col, j0 + key, query_end[e / 2]))) {
            p = __expf(st[half][e] * scale - lse_s[col]);
            ds = p * (dpt[half][e] - delta_s[col]);
          }
          st[half][e] = p;
          dpt[half][e] = ds;
        }
      // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end): B(k = query, n = d) is dO's and Q's rows, transposed.
      uint32_t pa[4], dsa[4];
      pack_a(pa, st);
      pack_a(dsa, dpt);
#pragma unroll
      for (int dn = 0; dn < D / 16; dn++) {
        uint32_t dof[4], qf[4];
        load_b_columns(dof, dOs + c * 16 * ldh + dn * 16, ldh, lane);
        load_b_columns(qf, Qs + c * 16 * ldh + dn * 16, ldh, lane);
        mma_pair(dv_acc[2 * dn], dv_acc[2 * dn + 1], pa, dof);
        mma_pair(dk_acc[2 * dn], dk_acc[2 * dn + 1], dsa, qf);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  store_rows<D>(dk + b * T * K * D, dk_acc, scale, j0, row0, nk, K, kv_head, g, t);
  store_rows<D>(dv + b * T * K * D, dv_acc, 1.0f, j0, row0, nk, K, kv_head, g, t);
}

// Shared memory: Q and dO (read into registers once), then K and V of stage 0, then of stage 1.
template <int D>
constexpr size_t kDqBytes = 6 * kTileBytes<D>;

// One block per (64 queries, head, batch); warp w owns queries 16w … 16w + 15 and their dQ accumulators.
template <int D>
__global__ void __launch_bounds__(kThreads) attention_dq_mma_kernel(float* dq, const bf16_t* dout, const float* lse,
                                                                    const float* delta, const bf16_t* q,
                                                                    const bf16_t* k, const bf16_t* v, int64_t T,
                                                                    int64_t Q0, int64_t H, int64_t K,
                                                                    int64_t window, DocumentOffsets docs,
                                                                    float scale) {
  constexpr int ldh = ld_head<D>;
  unsigned char* smem = dynamic_shared_memory();
  const bf16_t* Qs = tile_at<D>(smem, 0);
  const bf16_t* dOs = tile_at<D>(smem, 1);

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

  copy_rows_async<D>(tile_at<D>(smem, 0), q + b * Tq * H * D, i0 - Q0, nq, H, h);
  copy_rows_async<D>(tile_at<D>(smem, 1), dout + b * Tq * H * D, i0 - Q0, nq, H, h);
  copy_keys_async<D>(smem, 2, kb, vb, j_begin, min(int64_t(kTile), j_end - j_begin), K, kv_head);
  cp_async_commit();
  float row_lse[2], row_delta[2];
  row_stats(row_lse, row_delta, lse, delta, (b * H + h) * Tq + i0 - Q0, nq, row0, g);
  uint32_t qa[D / 16][4], doa[D / 16][4];
  float dq_acc[D / 8][4] = {};

  int stage = 0;
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = min(int64_t(kTile), j_end - j0), j_next = j0 + kTile;
    advance_pipeline(j_next < j_end, [&] {
      copy_keys_async<D>(smem, 2 + 2 * (stage ^ 1), kb, vb, j_next, min(int64_t(kTile), j_end - j_next), K, kv_head);
    });
    const bf16_t* Ks = tile_at<D>(smem, 2 + 2 * stage);
    const bf16_t* Vs = tile_at<D>(smem, 3 + 2 * stage);
    if (j0 == j_begin) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        load_a(qa[kk], Qs + row0 * ldh + kk * 16, ldh, lane);
        load_a(doa[kk], dOs + row0 * ldh + kk * 16, ldh, lane);
      }
    }

    const bool mask = needs_mask(i0, nq, kBlockRows, j0, nk, kTile, j0 >= last_row_first);
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) {  // 16 keys at a time
      // S = Q·Kᵀ and dP = dO·Vᵀ: the warp's 16 queries × 16 keys (two 8-key tiles); B(k = d, n = key) is K's
      // and V's rows as stored.
      float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        uint32_t kf[4], vf[4];
        load_b_rows(kf, Ks + j * 16 * ldh + kk * 16, ldh, lane);
        load_b_rows(vf, Vs + j * 16 * ldh + kk * 16, ldh, lane);
        mma_pair(s[0], s[1], qa[kk], kf);
        mma_pair(dp[0], dp[1], doa[kk], vf);
      }
      // dS = P ∘ (dP − delta) with P = exp(scale·S − lse), zero where masked.
#pragma unroll
      for (int half = 0; half < 2; half++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int row = row0 + g + 8 * (e / 2), col = j * 16 + half * 8 + 2 * t + e % 2;
          float ds = 0.0f;
          if (!mask || (row < nq && col < nk && visible_from(i0 + row, j0 + col, first[e / 2]))) {
            const float p = __expf(s[half][e] * scale - row_lse[e / 2]);
            ds = p * (dp[half][e] - row_delta[e / 2]);
          }
          dp[half][e] = ds;
        }
      // dQ += dS·K (scaled at the end): B(k = key, n = d) is K's rows, transposed.
      uint32_t dsa[4];
      pack_a(dsa, dp);
#pragma unroll
      for (int dn = 0; dn < D / 16; dn++) {
        uint32_t kf[4];
        load_b_columns(kf, Ks + j * 16 * ldh + dn * 16, ldh, lane);
        mma_pair(dq_acc[2 * dn], dq_acc[2 * dn + 1], dsa, kf);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  store_rows<D>(dq + b * Tq * H * D, dq_acc, scale, i0 - Q0, row0, nq, H, h, g, t);
}

}  // namespace

void attention_forward_mma(Context& ctx, float* out, float* lse, WeightRef q, WeightRef k, WeightRef v,
                           const AttentionShape& s, const DocumentOffsets& docs) {
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}})) return;
  const ForwardOperands in(ctx, q, k, v, s);
  with_head_dim(s.D, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    static const size_t bytes =
        prepare_kernel(attention_forward_mma_kernel<D>, kForwardBytes<D>, "attention_forward_mma");
    launch("attention_forward_mma", attention_forward_mma_kernel<D>, in.grid, kThreads, bytes, ctx.stream(), out, lse,
           in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K, s.window, docs, in.scale);
  });
}

void attention_backward_mma(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                            const float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                            const DocumentOffsets& docs) {
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}, {dout, "dout"}})) return;
  const BackwardOperands in(ctx, dout, out, q, k, v, s);
  with_head_dim(s.D, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    static const size_t dkdv_bytes =
        prepare_kernel(attention_dkdv_mma_kernel<D>, kDkDvBytes<D>, "attention_dkdv_mma");
    static const size_t dq_bytes = prepare_kernel(attention_dq_mma_kernel<D>, kDqBytes<D>, "attention_dq_mma");
    launch("attention_dkdv_mma", attention_dkdv_mma_kernel<D>, in.kv_grid, kThreads, dkdv_bytes, ctx.stream(), dk,
           dv, in.dout.get(), lse, in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K,
           s.window, docs, in.scale);
    launch("attention_dq_mma", attention_dq_mma_kernel<D>, in.q_grid, kThreads, dq_bytes, ctx.stream(), dq,
           in.dout.get(), lse, in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K,
           s.window, docs, in.scale);
  });
}

}  // namespace replica::cuda
