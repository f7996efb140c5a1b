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
//
// Head dims: multiples of 16 up to 128, and 192 and 256 (attention_tiles.cuh, MmaHeadDims). Above 128 the Q and dO
// fragments are read from shared memory on every use instead of held (kRowsInRegisters), and each key tile has two
// dK/dV blocks, each accumulating half the head dims (kDkDvSplits), so that the accumulators fit in registers.
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

// Shared memory: Q (its fragments read into registers once, or on every tile above D = 128), then K and V of stage
// 0, then of stage 1.
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
  const QueryBlock block(T, Q0, H, K, window, docs);
  const bf16_t* kb = block.key_rows<D>(k);
  const bf16_t* vb = block.key_rows<D>(v);

  copy_rows_async<D>(Qs, block.query_rows<D>(q), block.first_row(), block.nq, H, block.h);
  copy_keys_async<D>(smem, 1, kb, vb, block.j_begin, block.keys(block.j_begin), K, block.kv_head);
  cp_async_commit();

  RowFragments<D> qa(Qs, block.row0, block.lane);
  float o[D / 8][4] = {};
  // Rows g and g + 8: running max (the same on the quad's lanes) and this lane's part of the running sum.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  int stage = 0;
  for (int64_t j0 = block.j_begin; j0 < block.j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = block.keys(j0), j_next = j0 + kTile;
    advance_pipeline(j_next < block.j_end, [&] {
      copy_keys_async<D>(smem, 1 + 2 * (stage ^ 1), kb, vb, j_next, block.keys(j_next), K, block.kv_head);
    });
    const bf16_t* Ks = tile_at<D>(smem, 1 + 2 * stage);
    const bf16_t* Vs = tile_at<D>(smem, 2 + 2 * stage);
    if (j0 == block.j_begin) qa.hold();

    // S = Q·Kᵀ: B(k = d, n = key) is K's rows as stored.
    float s[kTile / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
      uint32_t scratch[4];
      const uint32_t(&a)[4] = qa.at(kk, scratch);
#pragma unroll
      for (int n = 0; n < kTile / 16; n++) {
        uint32_t kf[4];
        load_b_rows(kf, Ks + n * 16 * ldh + kk * 16, ldh, block.lane);
        mma_pair(s[2 * n], s[2 * n + 1], a, kf);
      }
    }

    // Online softmax: scale, mask, the rows' new maxima, and O rescaled by how much they grew.
    float base[2];
    online_softmax<D>(s, o, m, l, base, block, block.needs_mask(j0, nk), j0, nk, scale);

    // P·V, 16 keys at a time: n-tiles 2j and 2j + 1 of P are the A fragment of keys [16j, 16j + 16), and
    // B(k = key, n = d) is V's rows as stored.
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) {
      uint32_t pa[4];
      probabilities(pa, s, j, base, l);
#pragma unroll
      for (int dn = 0; dn < D / 16; dn++) {
        uint32_t vf[4];
        load_b_columns(vf, Vs + j * 16 * ldh + dn * 16, ldh, block.lane);
        mma_pair(o[2 * dn], o[2 * dn + 1], pa, vf);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  finish_rows<D>(o, lse + block.stats_at(), m, l, block.nq, block.row0, block.g, block.t);
  store_rows<D>(block.query_rows<D>(out), o, 1.0f, block.first_row(), block.row0, block.nq, H, block.h, block.g,
                block.t);
}

// ---- Backward -----------------------------------------------------------------------------------------------

// Shared memory: K, V; then Q and dO of stage 0, of stage 1; then lse and delta of stage 0, of stage 1.
template <int D>
constexpr size_t kDkDvBytes = 6 * kTileBytes<D> + 2 * 2 * kTile * sizeof(float);

// One block per (64 keys, KV head, batch), or per column slice of them above D = 128 (KeyBlock); warp w owns keys
// 16w … 16w + 15 and their dK, dV accumulators, over the query tiles that see the block's keys (QueryTiles).
template <int D>
__global__ void __launch_bounds__(kThreads) attention_dkdv_mma_kernel(float* dk, float* dv, const bf16_t* dout,
                                                                      const float* lse, const float* delta,
                                                                      const bf16_t* q, const bf16_t* k,
                                                                      const bf16_t* v, int64_t T, int64_t Q0,
                                                                      int64_t H, int64_t K, int64_t window,
                                                                      DocumentOffsets docs, float scale) {
  constexpr int ldh = ld_head<D>, kCols = kDkDvColumns<D>;
  unsigned char* smem = dynamic_shared_memory();
  const bf16_t* Ks = tile_at<D>(smem, 0);
  const bf16_t* Vs = tile_at<D>(smem, 1);
  float* stats = reinterpret_cast<float*>(smem + 6 * kTileBytes<D>);  // [stage][lse, delta][kTile]
  const KeyBlock block(T, Q0, H, K, window, docs, kDkDvSplits<D>, kDkDvColumns<D>);
  const QueryTiles& tiles = block.tiles;
  const int row0 = block.row0, lane = block.lane;
  const bf16_t* qb = block.query_rows<D>(q);
  const bf16_t* dob = block.query_rows<D>(dout);
  // Starts fetching query tile `index` (Q, dO and their rows' lse and delta) into `stage`.
  auto fetch = [&](int64_t index, int stage) {
    const int64_t h = tiles.head(index), i0 = tiles.first_query(index), nq = tiles.rows(index);
    copy_rows_async<D>(tile_at<D>(smem, 2 + 2 * stage), qb, i0 - Q0, nq, H, h);
    copy_rows_async<D>(tile_at<D>(smem, 3 + 2 * stage), dob, i0 - Q0, nq, H, h);
    float* lse_s = stats + 2 * kTile * stage;
    load_row_stats(lse_s, lse_s + kTile, kTile, lse, delta, block.stats_at(h, i0), nq);
  };

  copy_keys_async<D>(smem, 0, block.key_rows<D>(k), block.key_rows<D>(v), block.j0, block.nk, K, block.kv_head);
  if (tiles.count > 0) fetch(0, 0);  // keys no query sees (before a query slice, say) visit no tile: dK = dV = 0
  cp_async_commit();
  float dk_acc[kCols / 8][4] = {}, dv_acc[kCols / 8][4] = {};

  int stage = 0;
  for (int64_t index = 0; index < tiles.count; index++, stage ^= 1) {
    advance_pipeline(index + 1 < tiles.count, [&] { fetch(index + 1, stage ^ 1); });
    const int64_t i0 = tiles.first_query(index), nq = tiles.rows(index);
    const bf16_t* Qs = tile_at<D>(smem, 2 + 2 * stage);
    const bf16_t* dOs = tile_at<D>(smem, 3 + 2 * stage);
    const float* lse_s = stats + 2 * kTile * stage;

    const bool mask = block.needs_mask(i0, nq);
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
      // Pᵀ and dSᵀ, zero where masked (row: key, column: query).
      backward_scores(st, dpt, block, mask, i0, nq, c * 16, lse_s, lse_s + kTile, scale);
      // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end) for the block's head dims: B(k = query, n = d) is dO's and
      // Q's rows, transposed.
      uint32_t pa[4], dsa[4];
      pack_a(pa, st);
      pack_a(dsa, dpt);
#pragma unroll
      for (int dn = 0; dn < kCols / 16; dn++) {
        uint32_t dof[4], qf[4];
        load_b_columns(dof, dOs + c * 16 * ldh + block.col0 + dn * 16, ldh, lane);
        load_b_columns(qf, Qs + c * 16 * ldh + block.col0 + dn * 16, ldh, lane);
        mma_pair(dv_acc[2 * dn], dv_acc[2 * dn + 1], pa, dof);
        mma_pair(dk_acc[2 * dn], dk_acc[2 * dn + 1], dsa, qf);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  store_rows<D, kCols>(block.key_rows<D>(dk), dk_acc, scale, block.j0, row0, block.nk, K, block.kv_head, block.g,
                       block.t, block.col0);
  store_rows<D, kCols>(block.key_rows<D>(dv), dv_acc, 1.0f, block.j0, row0, block.nk, K, block.kv_head, block.g,
                       block.t, block.col0);
}

// Shared memory: Q and dO (their fragments read into registers once, or on every use above D = 128), then K and V
// of stage 0, then of stage 1.
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
  const QueryBlock block(T, Q0, H, K, window, docs);
  const int lane = block.lane;
  const bf16_t* kb = block.key_rows<D>(k);
  const bf16_t* vb = block.key_rows<D>(v);

  copy_rows_async<D>(tile_at<D>(smem, 0), block.query_rows<D>(q), block.first_row(), block.nq, H, block.h);
  copy_rows_async<D>(tile_at<D>(smem, 1), block.query_rows<D>(dout), block.first_row(), block.nq, H, block.h);
  copy_keys_async<D>(smem, 2, kb, vb, block.j_begin, block.keys(block.j_begin), K, block.kv_head);
  cp_async_commit();
  float row_lse[2], row_delta[2];
  row_stats(row_lse, row_delta, lse, delta, block.stats_at(), block.nq, block.row0, block.g);
  RowFragments<D> qa(Qs, block.row0, lane), doa(dOs, block.row0, lane);
  float dq_acc[D / 8][4] = {};

  int stage = 0;
  for (int64_t j0 = block.j_begin; j0 < block.j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = block.keys(j0), j_next = j0 + kTile;
    advance_pipeline(j_next < block.j_end, [&] {
      copy_keys_async<D>(smem, 2 + 2 * (stage ^ 1), kb, vb, j_next, block.keys(j_next), K, block.kv_head);
    });
    const bf16_t* Ks = tile_at<D>(smem, 2 + 2 * stage);
    const bf16_t* Vs = tile_at<D>(smem, 3 + 2 * stage);
    if (j0 == block.j_begin) {
      qa.hold();
      doa.hold();
    }

    const bool mask = block.needs_mask(j0, nk);
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) {  // 16 keys at a time
      // S = Q·Kᵀ and dP = dO·Vᵀ: the warp's 16 queries × 16 keys (two 8-key tiles); B(k = d, n = key) is K's
      // and V's rows as stored.
      float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        uint32_t kf[4], vf[4], q_scratch[4], do_scratch[4];
        load_b_rows(kf, Ks + j * 16 * ldh + kk * 16, ldh, lane);
        load_b_rows(vf, Vs + j * 16 * ldh + kk * 16, ldh, lane);
        mma_pair(s[0], s[1], qa.at(kk, q_scratch), kf);
        mma_pair(dp[0], dp[1], doa.at(kk, do_scratch), vf);
      }
      // dS = P ∘ (dP − delta), zero where masked.
      backward_scores(s, dp, block, mask, j0, nk, j * 16, row_lse, row_delta, scale);
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

  store_rows<D>(block.query_rows<D>(dq), dq_acc, scale, block.first_row(), block.row0, block.nq, H, block.h, block.g,
                block.t);
}

}  // namespace

bool attention_mma_head_dim(int64_t D) { return MmaHeadDims::has(D); }

void attention_forward_mma(Context& ctx, float* out, float* lse, WeightRef q, WeightRef k, WeightRef v,
                           const AttentionShape& s, const DocumentOffsets& docs) {
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}})) return;
  const ForwardOperands in(ctx, q, k, v, s);
  with_head_dim(MmaHeadDims{}, s.D, [&](auto head_dim) {
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
  with_head_dim(MmaHeadDims{}, s.D, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    static const size_t dkdv_bytes =
        prepare_kernel(attention_dkdv_mma_kernel<D>, kDkDvBytes<D>, "attention_dkdv_mma");
    static const size_t dq_bytes = prepare_kernel(attention_dq_mma_kernel<D>, kDqBytes<D>, "attention_dq_mma");
    launch("attention_dkdv_mma", attention_dkdv_mma_kernel<D>, in.key_grid(kDkDvSplits<D>), kThreads, dkdv_bytes,
           ctx.stream(), dk, dv, in.dout.get(), lse, in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T,
           s.q_offset(), s.H, s.K, s.window, docs, in.scale);
    launch("attention_dq_mma", attention_dq_mma_kernel<D>, in.q_grid, kThreads, dq_bytes, ctx.stream(), dq,
           in.dout.get(), lse, in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K,
           s.window, docs, in.scale);
  });
}

}  // namespace replica::cuda
