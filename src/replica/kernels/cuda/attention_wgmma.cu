// Attention on Hopper's warpgroup products (wgmma.cuh): the mma.sync kernels' algorithms (attention_mma.cu:
// blocks of 64 queries or keys, one warp per 16 rows, softmax on the accumulators, P and dS repacked as A
// fragments, the deterministic two-pass backward) with every product issued by the whole block as one warpgroup
// and its B operand read by the tensor cores straight from shared memory. The mma.sync kernels load every B
// fragment through the warp's registers (one 512-byte ldmatrix per two products), which bounds them by
// shared-memory bandwidth; here no thread reads a tile after copying it in, except Q and dO into registers once.
// Same contract, arguments, rounding points and outputs as the mma.sync pair, and interchangeable with it. Head
// dims 64, 128 and 256 on an sm_90 GPU (the products are 64 columns wide; WgmmaHeadDims); everything else takes the
// mma.sync kernels. At D = 256 Q and dO are core tiles too, the A operand of S = Q·Kᵀ and dP = dO·Vᵀ read from
// shared memory (their fragments would not fit in registers beside the accumulators), and each key tile has two
// dK/dV blocks, each accumulating half the head dims (kRowsInRegisters, kDkDvSplits: attention_tiles.cuh).
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

// Tiles as wgmma reads them (K and V; Q and dO in dK/dV, and above D = 128 everywhere): core matrices of 8 tokens ×
// 8 head dims (128 contiguous bytes, a token's 8 values per 16-byte row), the D / 8 core matrices of 8 tokens one
// after the other, then the next 8 tokens.
template <int D>
constexpr size_t kCoreTileBytes = size_t(kTile) * D * 2;
template <int D>
constexpr uint32_t kTokenGroupBytes = D * 16;  // from one 8-token group to the next
constexpr uint32_t kCoreMatrixBytes = 128;     // from one 8-dim group to the next

// Q and dO in the forward and dQ kernels: row-major and padded as the mma.sync kernels keep them, for their fragments
// to be read into registers once, or above D = 128 a core tile.
template <int D>
constexpr size_t kRowTileBytes = kRowsInRegisters<D> ? kTileBytes<D> : kCoreTileBytes<D>;

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

// The same into a tile of kRowTileBytes (row-major, or core matrices above D = 128).
template <int D>
__device__ void copy_query_rows_async(bf16_t* tile, const bf16_t* x, int64_t t0, int64_t n, int64_t heads,
                                      int64_t head) {
  if constexpr (kRowsInRegisters<D>) copy_rows_async<D>(tile, x, t0, n, heads, head);
  else copy_core_rows_async<D>(tile, x, t0, n, heads, head);
}

// A block's 64 rows of Q or dO as the A operand of products over the head dims: the warp's fragments held in
// registers (loaded once by hold(), from the row-major tile), or above D = 128 the core tile read through a
// descriptor by every product.
template <int D>
class RowOperand {
 public:
  __device__ explicit RowOperand(const bf16_t* tile) : tile_(tile) {}
  __device__ void hold(int row0, int lane) {
    if constexpr (kRowsInRegisters<D>) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) load_a(held_[kk], tile_ + row0 * ld_head<D> + kk * 16, ld_head<D>, lane);
    }
  }
  // acc (+)= the rows' head dims [16kk, 16kk + 16) times B (K-major, through descriptor b), 64 columns.
  __device__ void multiply(float (&acc)[32], int kk, uint64_t b) const {
    if constexpr (kRowsInRegisters<D>) wgmma_m64n64k16<false>(acc, held_[kk], b, kk > 0);
    else wgmma_m64n64k16_ss(acc, k_major<D>(tile_, kk), b, kk > 0);
  }

 private:
  const bf16_t* tile_;
  uint32_t held_[kRowsInRegisters<D> ? D / 16 : 1][4];
};

// Eight consecutive 16 × 8 accumulator tiles of a warp (64 columns) as one wgmma operand: the same 32 floats.
__device__ inline float (&wgmma_tiles(float (*tiles)[4]))[32] { return *reinterpret_cast<float(*)[32]>(tiles); }

// Shared memory: Q (kRowTileBytes), then K and V of stage 0, then of stage 1.
template <int D>
constexpr size_t kWgmmaForwardBytes = kRowTileBytes<D> + 4 * kCoreTileBytes<D>;

template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_forward_wgmma_kernel(float* out, float* lse, const bf16_t* q, const bf16_t* k, const bf16_t* v, int64_t T,
                                   int64_t Q0, int64_t H, int64_t K, int64_t window, DocumentOffsets docs,
                                   float scale) {
  static_assert(D % 64 == 0 && kTile == 64, "the products are m64n64k16");
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem);
  auto core = [&](int index) { return reinterpret_cast<bf16_t*>(smem + kRowTileBytes<D> + index * kCoreTileBytes<D>); };
  const QueryBlock block(T, Q0, H, K, window, docs);  // the warp's rows as in the warpgroup's products
  const bf16_t* kb = block.key_rows<D>(k);
  const bf16_t* vb = block.key_rows<D>(v);
  auto fetch = [&](int64_t j, int stage) {  // keys [j, j + 64) of K and V into `stage`
    copy_core_rows_async<D>(core(2 * stage), kb, j, block.keys(j), K, block.kv_head);
    copy_core_rows_async<D>(core(2 * stage + 1), vb, j, block.keys(j), K, block.kv_head);
  };

  copy_query_rows_async<D>(Qs, block.query_rows<D>(q), block.first_row(), block.nq, H, block.h);
  fetch(block.j_begin, 0);
  cp_async_commit();

  RowOperand<D> qa(Qs);
  float o[D / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  int stage = 0;
  for (int64_t j0 = block.j_begin; j0 < block.j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = block.keys(j0), j_next = j0 + kTile;
    advance_pipeline<true>(j_next < block.j_end, [&] { fetch(j_next, stage ^ 1); });
    const bf16_t* Ks = core(2 * stage);
    const bf16_t* Vs = core(2 * stage + 1);
    if (j0 == block.j_begin) qa.hold(block.row0, block.lane);

    // S = Q·Kᵀ: B(k = d, n = key) is K-major, 16 dims (two core matrices) per product.
    float s[kTile / 8][4] = {};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) qa.multiply(wgmma_tiles(s), kk, k_major<D>(Ks, kk));
    wgmma_commit();
    wgmma_wait<0>();

    float base[2];
    online_softmax<D>(s, o, m, l, base, block, block.needs_mask(j0, nk), j0, nk, scale);

    // O += P·V: B(k = key, n = d) is MN-major, 16 keys (two 8-token groups) by 64 dims per product.
    uint32_t pa[kTile / 16][4];
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) probabilities(pa[j], s, j, base, l);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kTile / 16; j++)
#pragma unroll
      for (int half = 0; half < D / 64; half++)
        wgmma_m64n64k16<true>(wgmma_tiles(o + 8 * half), pa[j], mn_major<D>(Vs, j, half), true);
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  finish_rows<D>(o, lse + block.stats_at(), m, l, block.nq, block.row0, block.g, block.t);
  store_rows<D>(block.query_rows<D>(out), o, 1.0f, block.first_row(), block.row0, block.nq, H, block.h, block.g,
                block.t);
}

// ---- Backward -----------------------------------------------------------------------------------------------

// Shared memory: K and V (core tiles, A of Sᵀ and dPᵀ), then Q and dO of stage 0 and stage 1 (core tiles, B of
// all four products), then lse and delta of stage 0 and stage 1.
template <int D>
constexpr size_t kWgmmaDkDvBytes = 6 * kCoreTileBytes<D> + 2 * 2 * kTile * sizeof(float);

// attention_dkdv_mma_kernel's work on warpgroup products: per query tile, Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ with both
// operands in shared memory, Pᵀ and dSᵀ in registers, then dV += Pᵀ·dO and dK += dSᵀ·Q for the block's head dims
// with Pᵀ and dSᵀ repacked as A and dO, Q as MN-major B.
template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_dkdv_wgmma_kernel(float* dk, float* dv, const bf16_t* dout, const float* lse, const float* delta,
                                const bf16_t* q, const bf16_t* k, const bf16_t* v, int64_t T, int64_t Q0, int64_t H,
                                int64_t K, int64_t window, DocumentOffsets docs, float scale) {
  constexpr int kCols = kDkDvColumns<D>;
  static_assert(kCols % 64 == 0, "dK and dV are accumulated 64 head dims a product");
  unsigned char* smem = dynamic_shared_memory();
  auto core = [&](int index) { return reinterpret_cast<bf16_t*>(smem + index * kCoreTileBytes<D>); };
  float* stats = reinterpret_cast<float*>(smem + 6 * kCoreTileBytes<D>);  // [stage][lse, delta][kTile]
  const KeyBlock block(T, Q0, H, K, window, docs, kDkDvSplits<D>, kDkDvColumns<D>);
  const QueryTiles& tiles = block.tiles;
  const bf16_t* qb = block.query_rows<D>(q);
  const bf16_t* dob = block.query_rows<D>(dout);
  auto fetch = [&](int64_t index, int stage) {  // query tile `index` (Q, dO, lse, delta) into `stage`
    const int64_t h = tiles.head(index), i0 = tiles.first_query(index), nq = tiles.rows(index);
    copy_core_rows_async<D>(core(2 + 2 * stage), qb, i0 - Q0, nq, H, h);
    copy_core_rows_async<D>(core(3 + 2 * stage), dob, i0 - Q0, nq, H, h);
    float* lse_s = stats + 2 * kTile * stage;
    load_row_stats(lse_s, lse_s + kTile, kTile, lse, delta, block.stats_at(h, i0), nq);
  };

  copy_core_rows_async<D>(core(0), block.key_rows<D>(k), block.j0, block.nk, K, block.kv_head);
  copy_core_rows_async<D>(core(1), block.key_rows<D>(v), block.j0, block.nk, K, block.kv_head);
  if (tiles.count > 0) fetch(0, 0);  // keys no query sees (before a query slice, say) visit no tile: dK = dV = 0
  cp_async_commit();
  float dk_acc[kCols / 8][4] = {}, dv_acc[kCols / 8][4] = {};

  int stage = 0;
  for (int64_t index = 0; index < tiles.count; index++, stage ^= 1) {
    advance_pipeline<true>(index + 1 < tiles.count, [&] { fetch(index + 1, stage ^ 1); });
    const int64_t i0 = tiles.first_query(index), nq = tiles.rows(index);
    const bf16_t* Qs = core(2 + 2 * stage);
    const bf16_t* dOs = core(3 + 2 * stage);
    const float* lse_s = stats + 2 * kTile * stage;

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

    // Pᵀ and dSᵀ, zero where masked (row: key, column: query).
    backward_scores(st, dpt, block, block.needs_mask(i0, nq), i0, nq, 0, lse_s, lse_s + kTile, scale);
    // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end) for the block's head dims, 16 queries at a time.
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
      for (int half = 0; half < kCols / 64; half++) {
        const int dims = block.col0 / 64 + half;  // head dims [64·dims, 64·dims + 64)
        wgmma_m64n64k16<true>(wgmma_tiles(dv_acc + 8 * half), pa[j], mn_major<D>(dOs, j, dims), true);
        wgmma_m64n64k16<true>(wgmma_tiles(dk_acc + 8 * half), dsa[j], mn_major<D>(Qs, j, dims), true);
      }
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // every warp is done with this stage before the next iteration fetches into it
  }

  store_rows<D, kCols>(block.key_rows<D>(dk), dk_acc, scale, block.j0, block.row0, block.nk, K, block.kv_head,
                       block.g, block.t, block.col0);
  store_rows<D, kCols>(block.key_rows<D>(dv), dv_acc, 1.0f, block.j0, block.row0, block.nk, K, block.kv_head,
                       block.g, block.t, block.col0);
}

// Shared memory: Q and dO (kRowTileBytes each), then K and V of stage 0 and stage 1 (core tiles).
template <int D>
constexpr size_t kWgmmaDqBytes = 2 * kRowTileBytes<D> + 4 * kCoreTileBytes<D>;

// attention_dq_mma_kernel's work on warpgroup products: per key tile, S = Q·Kᵀ and dP = dO·Vᵀ (RowOperand A), dS
// in registers, then dQ += dS·K with K as MN-major B.
template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_dq_wgmma_kernel(float* dq, const bf16_t* dout, const float* lse, const float* delta, const bf16_t* q,
                              const bf16_t* k, const bf16_t* v, int64_t T, int64_t Q0, int64_t H, int64_t K,
                              int64_t window, DocumentOffsets docs, float scale) {
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem);
  bf16_t* dOs = reinterpret_cast<bf16_t*>(smem + kRowTileBytes<D>);
  auto core = [&](int index) {
    return reinterpret_cast<bf16_t*>(smem + 2 * kRowTileBytes<D> + index * kCoreTileBytes<D>);
  };
  const QueryBlock block(T, Q0, H, K, window, docs);
  const bf16_t* kb = block.key_rows<D>(k);
  const bf16_t* vb = block.key_rows<D>(v);
  auto fetch = [&](int64_t j, int stage) {  // keys [j, j + 64) of K and V into `stage`
    copy_core_rows_async<D>(core(2 * stage), kb, j, block.keys(j), K, block.kv_head);
    copy_core_rows_async<D>(core(2 * stage + 1), vb, j, block.keys(j), K, block.kv_head);
  };

  copy_query_rows_async<D>(Qs, block.query_rows<D>(q), block.first_row(), block.nq, H, block.h);
  copy_query_rows_async<D>(dOs, block.query_rows<D>(dout), block.first_row(), block.nq, H, block.h);
  fetch(block.j_begin, 0);
  cp_async_commit();
  float row_lse[2], row_delta[2];
  row_stats(row_lse, row_delta, lse, delta, block.stats_at(), block.nq, block.row0, block.g);
  RowOperand<D> qa(Qs), doa(dOs);
  float dq_acc[D / 8][4] = {};

  int stage = 0;
  for (int64_t j0 = block.j_begin; j0 < block.j_end; j0 += kTile, stage ^= 1) {
    const int64_t nk = block.keys(j0), j_next = j0 + kTile;
    advance_pipeline<true>(j_next < block.j_end, [&] { fetch(j_next, stage ^ 1); });
    const bf16_t* Ks = core(2 * stage);
    const bf16_t* Vs = core(2 * stage + 1);
    if (j0 == block.j_begin) {
      qa.hold(block.row0, block.lane);
      doa.hold(block.row0, block.lane);
    }

    // S = Q·Kᵀ and dP = dO·Vᵀ: B(k = d, n = key) is K-major.
    float s[kTile / 8][4] = {}, dp[kTile / 8][4] = {};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
      qa.multiply(wgmma_tiles(s), kk, k_major<D>(Ks, kk));
      doa.multiply(wgmma_tiles(dp), kk, k_major<D>(Vs, kk));
    }
    wgmma_commit();
    wgmma_wait<0>();

    // dS = P ∘ (dP − delta), zero where masked.
    backward_scores(s, dp, block, block.needs_mask(j0, nk), j0, nk, 0, row_lse, row_delta, scale);
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

  store_rows<D>(block.query_rows<D>(dq), dq_acc, scale, block.first_row(), block.row0, block.nq, H, block.h, block.g,
                block.t);
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
  if (!hopper(ctx) || !WgmmaHeadDims::has(s.D)) return attention_forward_mma(ctx, out, lse, q, k, v, s, docs);
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}})) return;
  const ForwardOperands in(ctx, q, k, v, s);
  with_head_dim(WgmmaHeadDims{}, s.D, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    static const size_t bytes =
        prepare_kernel(attention_forward_wgmma_kernel<D>, kWgmmaForwardBytes<D>, "attention_forward_wgmma");
    launch("attention_forward_wgmma", attention_forward_wgmma_kernel<D>, in.grid, kThreads, bytes, ctx.stream(), out,
           lse, in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K, s.window, docs, in.scale);
  });
}

void attention_backward_wgmma(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                              const float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                              const DocumentOffsets& docs) {
  if (!hopper(ctx) || !WgmmaHeadDims::has(s.D))
    return attention_backward_mma(ctx, dq, dk, dv, dout, out, lse, q, k, v, s, docs);
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}, {dout, "dout"}})) return;
  const BackwardOperands in(ctx, dout, out, q, k, v, s);
  with_head_dim(WgmmaHeadDims{}, s.D, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    static const size_t dkdv_bytes =
        prepare_kernel(attention_dkdv_wgmma_kernel<D>, kWgmmaDkDvBytes<D>, "attention_dkdv_wgmma");
    static const size_t dq_bytes = prepare_kernel(attention_dq_wgmma_kernel<D>, kWgmmaDqBytes<D>, "attention_dq_wgmma");
    launch("attention_dkdv_wgmma", attention_dkdv_wgmma_kernel<D>, in.key_grid(kDkDvSplits<D>), kThreads, dkdv_bytes,
           ctx.stream(), dk, dv, in.dout.get(), lse, in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T,
           s.q_offset(), s.H, s.K, s.window, docs, in.scale);
    launch("attention_dq_wgmma", attention_dq_wgmma_kernel<D>, in.q_grid, kThreads, dq_bytes, ctx.stream(), dq,
           in.dout.get(), lse, in.delta.get(), in.q.get(), in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K,
           s.window, docs, in.scale);
  });
}

}  // namespace replica::cuda
