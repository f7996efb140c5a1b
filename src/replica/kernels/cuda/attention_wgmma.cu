// Attention on Hopper's warpgroup products (wgmma.cuh), FlashAttention-3's design as far as replica has it: blocks
// of 64 queries or keys, one warp per 16 rows, softmax on the accumulators, P and dS repacked as A fragments (the
// mma.sync kernels' layout, attention_mma.cu), with every product issued by the whole block as one warpgroup and its
// B operand read by the tensor cores straight from shared memory. The mma.sync kernels load every B fragment through
// the warp's registers (one 512-byte ldmatrix per two products), which bounds them by shared-memory bandwidth; here
// no thread reads a tile after copying it in, except Q and dO into registers once. Same contract, arguments,
// rounding points and outputs as the mma.sync pair (not the same bits: the backward sums dQ in another order), and
// interchangeable with it. Head dims 64, 128 and 256 on an sm_90 GPU (the products are 64 columns wide;
// WgmmaHeadDims); everything else takes the mma.sync kernels. At D = 256 Q and dO are core tiles too, the A operand
// of S = Q·Kᵀ and dP = dO·Vᵀ read from shared memory (their fragments would not fit in registers beside the
// accumulators), and each key tile has two backward blocks, each accumulating half the head dims (kRowsInRegisters,
// kDkDvSplits: attention_tiles.cuh).
//
//   forward   per visible tile of 64 keys: S = Q·Kᵀ (A = Q's fragments, B = K, K-major), online softmax,
//             O += P·V (A = P repacked, B = V, MN-major; 64 head dims a product), the next tile's S computed
//             while this tile's softmax runs (FlashAttention-3's intra-warpgroup pipelining); a producer warp loads
//             Q, K and V with bulk copies onto mbarriers, the consumer warpgroup computes (warp specialisation)
//   backward  per key tile, per query tile: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (A = K, V and B = Q, dO, all from shared
//             memory), dV += Pᵀ·dO and dK += dSᵀ·Q (A = Pᵀ, dSᵀ repacked; B = dO, Q, MN-major), and dQ's share
//             dS·K (A = dS from shared memory, B = K, both MN-major) added to dq in key-tile order: five products,
//             one pass, deterministic
//
// Not yet FlashAttention-3's: tensor copies (cp.async.bulk.tensor; the forward's producer issues 16-byte 1-D bulk
// copies, the backward's threads 16-byte cp.async), a producer in the backward, two consumer warpgroups (128-row
// tiles), swizzled layouts (docs/gpu.md, "FlashAttention-3's design").
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/attention_fragments.cuh"
#include "replica/kernels/cuda/bulk_copy.cuh"
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/core_tile_fill.cuh"
#include "replica/kernels/cuda/turns.cuh"

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

// ---- Forward: a producer warp and a consumer warpgroup -----------------------------------------------------------

// FlashAttention-3's warp specialisation: the block is two warpgroups. Warpgroup 0 (the consumers, threads 0-127)
// computes, as before; warpgroup 1 is the producer, of which one warp issues every copy of the block (Q once, then
// K and V tile by tile, into two-stage rings) as bulk asynchronous copies (cp.async.bulk, the copy engine's 1-D
// form), each completing its bytes on the "full" barrier of its slot; the consumers wait there, and after their
// products have read a slot arrive on its "empty" barrier, which the producer waits on before refilling it. No
// __syncthreads in the loop: each side waits only for what it needs.
//
// Why 1-D bulk copies of 16 bytes and not one tensor copy a tile: wgmma reads these tiles without swizzling, as core
// matrices of 8 tokens × 16 bytes whose rows are different tokens, so no run of shared memory longer than 16 bytes is
// contiguous in global memory (a token's D values are 2D contiguous bytes there, 128 bytes apart here). A tensor
// copy (cp.async.bulk.tensor with a host-made CUtensorMap, a 5-D box of 8 dims × 8 tokens × D / 8 pieces × 8 token
// groups × 1 head) would land the layout in one instruction; it needs the driver's cuTensorMapEncodeTiled and
// tensor maps in the emulator (docs/gpu.md, "FlashAttention-3's design"). At D ≤ 128 Q is row-major (its fragments
// go to registers once), one 2D-byte copy a row.
//
// setmaxnreg: at D ≤ 128 the block is compiled for two blocks an SM (128 registers a thread at entry); the
// producer warpgroup gives registers up (24 a thread) and the consumers take them (232), the 32,768 of each block.
// At D = 256 shared memory allows one block an SM anyway, and every thread may have 255 registers: no setmaxnreg.
constexpr int kForwardThreads = 256;
constexpr int kProducerWarp = 4;  // the first warp of warpgroup 1
template <int D>
constexpr int kForwardBlocksPerSm = D <= 128 ? 2 : 1;
constexpr int kProducerRegisters = 24, kConsumerRegisters = 232;
static_assert(128 * (kProducerRegisters + kConsumerRegisters) == 65536 / 2, "two blocks' registers an SM");

// Shared memory: Q (kRowTileBytes), then K of stages 0 and 1, then V of stages 0 and 1, then the barriers.
struct ForwardBarriers {
  uint64_t q_full, k_full[2], k_empty[2], v_full[2], v_empty[2];
};
template <int D>
constexpr size_t kForwardBarriersAt = kRowTileBytes<D> + 4 * kCoreTileBytes<D>;
template <int D>
constexpr size_t kWgmmaForwardBytes = kForwardBarriersAt<D> + 128;
static_assert(sizeof(ForwardBarriers) <= 128, "the barriers' room");

// A producer lane's share of loading rows [t0, t0 + n) of head `head` of x [T, heads, D] into a tile: core
// matrices (or, with kRowMajor, rows of ld_head<D>), rows ≥ n zeroed. The lane zeroes its rows past n, fences them
// for the async proxy (wgmma reads the tile through it), arrives on `full` with the bytes its copies will land, then
// issues them; `full` expects one arrival per lane of the warp.
template <int D, bool kRowMajor>
__device__ void load_rows(bf16_t* tile, const bf16_t* x, int64_t t0, int64_t n, int64_t heads, int64_t head,
                          uint64_t* full, int lane) {
  constexpr int kPieces = kRowMajor ? 1 : D / 8;  // copies a row
  constexpr uint32_t kPieceBytes = kRowMajor ? D * 2 : 16;
  auto destination = [&](int token, int piece) {
    return kRowMajor ? tile + token * ld_head<D> : tile + core_piece_offset<D>({token, piece});
  };
  uint32_t bytes = 0;
  for (int e = lane; e < kTile * kPieces; e += 32) {
    const int token = e / kPieces, piece = e % kPieces;
    if (token < n) {
      bytes += kPieceBytes;
    } else {
      auto* dst = reinterpret_cast<float4*>(destination(token, piece));
      for (uint32_t i = 0; i < kPieceBytes / 16; i++) dst[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
  fence_proxy_async();
  mbarrier_arrive_expect_tx(full, bytes);
  for (int e = lane; e < kTile * kPieces; e += 32) {
    const int token = e / kPieces, piece = e % kPieces;
    if (token < n) bulk_copy(destination(token, piece), x + ((t0 + token) * heads + head) * D + piece * 8, kPieceBytes, full);
  }
}

// FlashAttention-3's intra-warpgroup pipelining in the consumers: the tensor cores compute S_{t+1} = Q·K_{t+1}ᵀ and
// O += P_t·V_t while the warps do tile t + 1's softmax, which would otherwise leave them idle (about 300 cycles of the
// 800 a tile takes at D = 128; the review of 2026-12-03, §2.5). Per tile t, with P_t in registers:
//
//   wait for K_{t+1}, issue S_{t+1} = Q·K_{t+1}ᵀ (commit); wait for V_t, issue O += P_t·V_t (commit)
//   wait until only one batch runs (S_{t+1} has landed): release K_{t+1}'s slot; maxima, rescaled sums, exponentials
//   wait for the last batch (O has landed): release V_t's slot; O rescaled, P_{t+1} packed from the exponentials
//
// O and P_t are read by the product in flight, so they change only after its wait (the emulator gives NaN for
// accumulators read before it). The producer fills K_0, then K_{t+1} and V_t for t = 0, 1, … (the order the consumers
// need them), each into the slot of tile t − 2 once the consumers have released it; a slot's use n completes phase n
// of its full barrier and, when released, of its empty one, so the consumers wait on parity n & 1 and the producer
// on (n & 1) ^ 1 (a fresh barrier's). The arithmetic, and so every output bit, is that of the unpipelined loop. Each
// batch has its own wgmma.fence, as in FlashAttention-3, and the last step is outside the loop: with one fence before
// both batches and S issued under a condition in the loop, ptxas serialised the products (C7515).
template <int D>
__global__ void __launch_bounds__(kForwardThreads, kForwardBlocksPerSm<D>)
    attention_forward_wgmma_kernel(float* out, float* lse, const bf16_t* q, const bf16_t* k, const bf16_t* v, int64_t T,
                                   int64_t Q0, int64_t H, int64_t K, int64_t window, DocumentOffsets docs,
                                   float scale) {
  static_assert(D % 64 == 0 && kTile == 64, "the products are m64n64k16");
  unsigned char* smem = dynamic_shared_memory();
  bf16_t* Qs = reinterpret_cast<bf16_t*>(smem);
  auto core = [&](int index) { return reinterpret_cast<bf16_t*>(smem + kRowTileBytes<D> + index * kCoreTileBytes<D>); };
  auto k_stage = [&](int64_t tile) { return core(int(tile % 2)); };
  auto v_stage = [&](int64_t tile) { return core(2 + int(tile % 2)); };
  auto* bars = reinterpret_cast<ForwardBarriers*>(smem + kForwardBarriersAt<D>);
  const QueryBlock block(T, Q0, H, K, window, docs);  // the consumer warp's rows as in the warpgroup's products
  const bf16_t* kb = block.key_rows<D>(k);
  const bf16_t* vb = block.key_rows<D>(v);
  const int64_t tiles = ceil_div(block.j_end - block.j_begin, int64_t(kTile));
  auto first_key = [&](int64_t tile) { return block.j_begin + tile * kTile; };
  auto use = [](int64_t tile) { return uint32_t(tile / 2) & 1; };  // the parity of a slot's use by `tile`

  if (threadIdx.x == 0) {
    mbarrier_init(&bars->q_full, 32);  // full barriers: one arrival per producer lane, with its bytes
    for (int s = 0; s < 2; s++) {
      mbarrier_init(&bars->k_full[s], 32);
      mbarrier_init(&bars->v_full[s], 32);
      mbarrier_init(&bars->k_empty[s], kThreads);  // empty barriers: every consumer thread releases
      mbarrier_init(&bars->v_empty[s], kThreads);
    }
  }
  fence_mbarrier_init();
  __syncthreads();  // the only block barrier: from here each side waits on the mbarriers

  if (threadIdx.x >= kThreads) {  // the producer warpgroup
    if constexpr (kForwardBlocksPerSm<D> == 2) setmaxnreg<false, kProducerRegisters>();
    if (int(threadIdx.x) / 32 != kProducerWarp) return;
    const int lane = int(threadIdx.x % 32);
    auto load_keys = [&](const bf16_t* x, bf16_t* stage, uint64_t* full, uint64_t* empty, int64_t tile) {
      mbarrier_wait(empty, use(tile) ^ 1);  // the consumers are done with the slot's previous tile
      load_rows<D, false>(stage, x, first_key(tile), block.keys(first_key(tile)), K, block.kv_head, full, lane);
    };
    load_rows<D, kRowsInRegisters<D>>(Qs, block.query_rows<D>(q), block.first_row(), block.nq, H, block.h,
                                      &bars->q_full, lane);
    load_keys(kb, k_stage(0), &bars->k_full[0], &bars->k_empty[0], 0);
    for (int64_t t = 0; t < tiles; t++) {
      if (t + 1 < tiles) load_keys(kb, k_stage(t + 1), &bars->k_full[(t + 1) % 2], &bars->k_empty[(t + 1) % 2], t + 1);
      load_keys(vb, v_stage(t), &bars->v_full[t % 2], &bars->v_empty[t % 2], t);
    }
    return;
  }

  // The consumer warpgroup.
  if constexpr (kForwardBlocksPerSm<D> == 2) setmaxnreg<true, kConsumerRegisters>();
  RowOperand<D> qa(Qs);
  mbarrier_wait(&bars->q_full, 0);
  qa.hold(block.row0, block.lane);
  float o[D / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float s[kTile / 8][4];  // S_t's scores, then its probabilities in fp32
  uint32_t pa[kTile / 16][4];  // P_t as P·V's A fragments
  float alpha[2], base[2];
  // S = Q·Kᵀ: B(k = d, n = key) is K-major, 16 dims (two core matrices) per product, once K_tile has landed.
  auto issue_scores = [&](int64_t tile) {
    mbarrier_wait(&bars->k_full[tile % 2], use(tile));
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) qa.multiply(wgmma_tiles(s), kk, k_major<D>(k_stage(tile), kk));
    wgmma_commit();
  };
  auto softmax = [&](int64_t tile) {  // S_tile, landed, into its probabilities; alpha for O
    const int64_t j0 = first_key(tile), nk = block.keys(j0);
    softmax_maxima(s, m, l, alpha, base, block, block.needs_mask(j0, nk), j0, nk, scale);
    exponentiate(s, base, l);
  };
  auto pack_probabilities = [&] {
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) pack_columns(pa[j], s, j);
  };

  // O += P_t·V_t: B(k = key, n = d) is MN-major, 16 keys (two 8-token groups) by 64 dims per product.
  auto issue_values = [&](int64_t tile) {
    mbarrier_wait(&bars->v_full[tile % 2], use(tile));
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kTile / 16; j++)
#pragma unroll
      for (int half = 0; half < D / 64; half++)
        wgmma_m64n64k16<true>(wgmma_tiles(o + 8 * half), pa[j], mn_major<D>(v_stage(tile), j, half), true);
    wgmma_commit();
  };

  issue_scores(0);
  wgmma_wait<0>();
  mbarrier_arrive(&bars->k_empty[0]);  // S_0 has read K_0
  softmax(0);
  pack_probabilities();  // O is still 0: no rescaling

  for (int64_t t = 0; t + 1 < tiles; t++) {
    issue_scores(t + 1);
    issue_values(t);
    wgmma_wait<1>();  // S_{t+1} has landed; P_t·V_t may still run
    mbarrier_arrive(&bars->k_empty[(t + 1) % 2]);
    softmax(t + 1);
    wgmma_wait<0>();
    mbarrier_arrive(&bars->v_empty[t % 2]);
    rescale_rows<D>(o, alpha);
    pack_probabilities();
  }
  issue_values(tiles - 1);
  wgmma_wait<0>();

  finish_rows<D>(o, lse + block.stats_at(), m, l, block.nq, block.row0, block.g, block.t);
  store_rows<D>(block.query_rows<D>(out), o, 1.0f, block.first_row(), block.row0, block.nq, H, block.h, block.g,
                block.t);
}

// ---- Backward -----------------------------------------------------------------------------------------------

// The backward in one pass of five products per (key tile, query tile), FlashAttention-3's, where the mma.sync
// kernels take two passes and seven (a dK/dV pass, then a dQ pass that recomputes S and dP). A block of 64 keys
// (KeyBlock) visits its query tiles as the dK/dV pass did and, besides
//
//   Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (A = K, V and B = Q, dO, all from shared memory), then Pᵀ and dSᵀ in registers,
//   dV += Pᵀ·dO and dK += dSᵀ·Q (A = Pᵀ, dSᵀ repacked; B = dO, Q, MN-major),
//
// computes the tile's share of dQ, dS·K: dSᵀ goes to shared memory (the warps hold it by key, and dQ's products need
// it by query: A = dS read MN-major from there, B = K, MN-major), and the block adds its share to dq.
//
// Determinism without atomics: the blocks of consecutive key tiles take turns at each query tile's dq (turns.cuh),
// in key order, so every element of dq is the same sum in the same order on every run. The key tiles that visit a
// query tile are consecutive (a tile's first query tile and its last both grow with its keys), so a block's turn at
// a query tile comes when the previous key tile has added there, or at once when the previous key tile does not
// visit it (then the block is the first, and stores). Turns go from lower block indices to higher, the order in
// which a GPU dispatches blocks: a block never waits for one not yet running. At D = 256 each key tile has two
// blocks, each with half of the head dims of dK, dV and now dQ, and each half of dq its own turns.
//
// The order a block visits its query tiles in keeps the turns from costing a wavefront: last tile first, and each
// tile for all of the group's heads before the tile in front of it (QueryTiles::*_from_last). Every key tile's last
// query tile is at or past its predecessor's, so the predecessor meets each shared (tile, head) at the same step or
// earlier, and consecutive blocks run side by side. In the first tile first order, block k could add to its first
// tile only after block k − 1's second step, block k − 1 only after k − 2's, and so on: a causal row's blocks all
// ending together, the short ones mostly waiting (about half the slots idle).

// dSᵀ of a query tile as dQ's A operand: a core tile of 64 keys (its tokens) × 64 queries (its "head dims").
constexpr size_t kDsTileBytes = kCoreTileBytes<kTile>;

// Shared memory: K and V (core tiles, A of Sᵀ and dPᵀ, B of dQ's products), then Q and dO of stage 0 and stage 1
// (core tiles, B of all four products), then dSᵀ, then lse and delta of stage 0 and stage 1.
template <int D>
constexpr size_t kWgmmaBackwardBytes = 6 * kCoreTileBytes<D> + kDsTileBytes + 2 * 2 * kTile * sizeof(float);

// A warp's dSᵀ fragments (pack_columns of its keys' accumulators, queries [16j, 16j + 16)) into the dSᵀ tile: each
// register is two queries of one key, 4 contiguous bytes there; a warp's 32 lanes write one whole core matrix
// (8 keys × 8 queries) per register, no two in the same bank.
__device__ inline void store_ds(bf16_t* tile, const uint32_t (&ds)[4], int j, int row0, int g, int t) {
#pragma unroll
  for (int r = 0; r < 4; r++) {
    const int key = row0 + g + 8 * (r % 2), query = 16 * j + 8 * (r / 2) + 2 * t;
    *reinterpret_cast<uint32_t*>(tile + core_piece_offset<kTile>({key, query / 8}) + query % 8) = ds[r];
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_backward_wgmma_kernel(float* dq, float* dk, float* dv, int* dq_turns, const bf16_t* dout,
                                    const float* lse, const float* delta, const bf16_t* q, const bf16_t* k,
                                    const bf16_t* v, int64_t T, int64_t Q0, int64_t H, int64_t K, int64_t window,
                                    DocumentOffsets docs, float scale) {
  constexpr int kCols = kDkDvColumns<D>, kSplits = kDkDvSplits<D>;
  static_assert(kCols % 64 == 0, "dK, dV and dQ are accumulated 64 head dims a product");
  unsigned char* smem = dynamic_shared_memory();
  auto core = [&](int index) { return reinterpret_cast<bf16_t*>(smem + index * kCoreTileBytes<D>); };
  bf16_t* dSs = core(6);
  float* stats = reinterpret_cast<float*>(smem + 6 * kCoreTileBytes<D> + kDsTileBytes);  // [stage][lse, delta][kTile]
  const KeyBlock block(T, Q0, H, K, window, docs, kSplits, kCols);
  const QueryTiles& tiles = block.tiles;
  const bf16_t* qb = block.query_rows<D>(q);
  const bf16_t* dob = block.query_rows<D>(dout);
  auto fetch = [&](int64_t index, int stage) {  // query tile `index` (Q, dO, lse, delta) into `stage`
    const int64_t h = tiles.head_from_last(index), i0 = tiles.first_query_from_last(index);
    const int64_t nq = min(int64_t(kTile), T - i0);
    copy_core_rows_async<D>(core(2 + 2 * stage), qb, i0 - Q0, nq, H, h);
    copy_core_rows_async<D>(core(3 + 2 * stage), dob, i0 - Q0, nq, H, h);
    float* lse_s = stats + 2 * kTile * stage;
    load_row_stats(lse_s, lse_s + kTile, kTile, lse, delta, block.stats_at(h, i0), nq);
  };
  // Turns at dq: this block's is its key tile's index; the previous key tile (when there is one) visits the query
  // tiles it visits from the first one up to a point, and has added to those before this block.
  const int turn = int(block.j0 / kTile);
  int64_t previous_first = 0, previous_end = 0;  // the query tiles [first, end) the previous key tile visits
  if (block.j0 > 0) {
    const QueryTiles previous(block.j0 - kTile, kTile, block.row_mask, block.kv_head, H / K, Q0);
    previous_first = previous.i_first;
    previous_end = previous.i_first + previous.per_head * kTile;
  }
  auto turn_counter = [&](int64_t h, int64_t i0) {
    return dq_turns + ((block.b * H + h) * ceil_div(block.Tq, kTile) + (i0 - Q0) / kTile) * kSplits + blockIdx.x % kSplits;
  };

  copy_core_rows_async<D>(core(0), block.key_rows<D>(k), block.j0, block.nk, K, block.kv_head);
  copy_core_rows_async<D>(core(1), block.key_rows<D>(v), block.j0, block.nk, K, block.kv_head);
  if (tiles.count > 0) fetch(0, 0);  // keys no query sees (before a query slice, say) visit no tile: dK = dV = 0
  cp_async_commit();
  float dk_acc[kCols / 8][4] = {}, dv_acc[kCols / 8][4] = {};

  int stage = 0;
  for (int64_t index = 0; index < tiles.count; index++, stage ^= 1) {
    advance_pipeline<true>(index + 1 < tiles.count, [&] { fetch(index + 1, stage ^ 1); });
    const int64_t h = tiles.head_from_last(index), i0 = tiles.first_query_from_last(index);
    const int64_t nq = min(int64_t(kTile), T - i0);
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

    // Pᵀ and dSᵀ, zero where masked (row: key, column: query), as A fragments; dSᵀ also into shared memory.
    backward_scores(st, dpt, block, block.needs_mask(i0, nq), i0, nq, 0, lse_s, lse_s + kTile, scale);
    uint32_t pa[kTile / 16][4], dsa[kTile / 16][4];
#pragma unroll
    for (int j = 0; j < kTile / 16; j++) {
      pack_columns(pa[j], st, j);
      pack_columns(dsa[j], dpt, j);
      store_ds(dSs, dsa[j], j, block.row0, block.g, block.t);
    }
    fence_shared_for_wgmma();
    __syncthreads();  // the whole dSᵀ tile (each warp wrote its 16 keys) before dQ's products read it

    // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end) for the block's head dims, 16 queries at a time.
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
    wgmma_wait<0>();  // Pᵀ's and dSᵀ's registers free for dQ's share

    // This key tile's share of dQ = dS·K (times the scale) for the block's head dims, 64 at a time while dV and dK
    // accumulate: 16 keys a product, A = dS (queries × keys) MN-major from the dSᵀ tile, B = K (keys × dims).
    int* counter = turn_counter(h, i0);
    const bool first = i0 < previous_first || i0 >= previous_end;
#pragma unroll
    for (int half = 0; half < kCols / 64; half++) {
      const int dims = block.col0 / 64 + half;
      float dq_part[kTile / 8][4];
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < kTile / 16; j++)
        wgmma_m64n64k16_ss<true, true>(wgmma_tiles(dq_part), mn_major<kTile>(dSs, j, 0), mn_major<D>(core(0), j, dims),
                                       j > 0);
      wgmma_commit();
      wgmma_wait<0>();
      if (half == 0 && !first) wait_for_turn(counter, turn);
      store_rows<D, 64>(block.query_rows<D>(dq), dq_part, scale, i0 - Q0, block.row0, nq, H, h, block.g, block.t,
                        64 * dims, !first);
    }
    pass_turn(counter, turn + 1);  // its barrier also ends every warp's use of this stage and of dSᵀ
  }

  store_rows<D, kCols>(block.key_rows<D>(dk), dk_acc, scale, block.j0, block.row0, block.nk, K, block.kv_head,
                       block.g, block.t, block.col0);
  store_rows<D, kCols>(block.key_rows<D>(dv), dv_acc, 1.0f, block.j0, block.row0, block.nk, K, block.kv_head,
                       block.g, block.t, block.col0);
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
    launch("attention_forward_wgmma", attention_forward_wgmma_kernel<D>, in.grid, kForwardThreads, bytes, ctx.stream(), out,
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
    static const size_t bytes =
        prepare_kernel(attention_backward_wgmma_kernel<D>, kWgmmaBackwardBytes<D>, "attention_backward_wgmma");
    // One turn counter per (batch, head, query tile, half of the head dims), zero before the launch.
    const size_t counters = size_t(s.B * s.H * ceil_div(s.rows_q(), kTile) * kDkDvSplits<D>);
    Scratch<int> dq_turns(ctx, counters);
    check_cuda(cudaMemsetAsync(dq_turns.get(), 0, counters * sizeof(int), ctx.stream()), "attention_backward_wgmma");
    launch("attention_backward_wgmma", attention_backward_wgmma_kernel<D>, in.key_grid(kDkDvSplits<D>), kThreads,
           bytes, ctx.stream(), dq, dk, dv, dq_turns.get(), in.dout.get(), lse, in.delta.get(), in.q.get(),
           in.k.get(), in.v.get(), s.T, s.q_offset(), s.H, s.K, s.window, docs, in.scale);
  });
}

}  // namespace replica::cuda
