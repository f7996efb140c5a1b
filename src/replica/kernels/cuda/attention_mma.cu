// Flash attention forward with bf16 operands on tensor cores through mma.sync (mma.cuh), FlashAttention-2
// style: every warp owns 16 query rows and keeps their scores, probabilities and output accumulator in
// registers, where the fragment layout is documented, so a key tile costs no shared-memory round trip
// (attention_bf16.cu's wmma kernel stages S, P and O in shared memory because wmma's layout is unspecified).
// Same contract, arguments and outputs as attention_forward_bf16, whose backward consumes them.
//
//   block (64 queries, head, batch), 4 warps × 16 rows; for every visible tile of 64 keys:
//     K [64][D] and Vᵀ [D][64] into shared memory, rounded to bf16
//     S = Q·Kᵀ (the warp's Q fragments stay in registers), masked on boundary tiles
//     online softmax on the accumulators: each row's max over its quad of lanes, O rescaled in registers
//     P = the same registers rounded to bf16 as A fragments (an accumulator pair of n-tiles is one A tile)
//     O += P·V
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

constexpr int kThreads = 128;  // 4 warps
constexpr int kRowsPerWarp = 16;
constexpr int kBlockRows = 64;       // queries per block
constexpr int kKeyTile = 64;         // keys per tile
constexpr int kLdVt = kKeyTile + 8;  // Vᵀ row stride: padded by 16 bytes, as ld_head

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
  for (int kk = 0; kk < D / 16; kk++) {
    const bf16_t* tile = Qs + row0 * ldh + kk * 16 + 2 * t;
    qa[kk][0] = load_pair(tile + g * ldh);
    qa[kk][1] = load_pair(tile + (g + 8) * ldh);
    qa[kk][2] = load_pair(tile + g * ldh + 8);
    qa[kk][3] = load_pair(tile + (g + 8) * ldh + 8);
  }

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
      const bf16_t* key = Ks + (n * 8 + g) * ldh + 2 * t;
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        const uint32_t kb_frag[2] = {load_pair(key + kk * 16), load_pair(key + kk * 16 + 8)};
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
      const uint32_t pa[4] = {pack_bf16(p[0][0], p[0][1]), pack_bf16(p[0][2], p[0][3]), pack_bf16(p[1][0], p[1][1]),
                              pack_bf16(p[1][2], p[1][3])};
      // B(k = key, n = d) column-major: Vᵀ's rows.
      const bf16_t* value = Vt + g * kLdVt + j * 16 + 2 * t;
#pragma unroll
      for (int dn = 0; dn < D / 8; dn++) {
        const uint32_t vb_frag[2] = {load_pair(value + dn * 8 * kLdVt), load_pair(value + dn * 8 * kLdVt + 8)};
        mma_m16n8k16(o[dn], pa, vb_frag);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; r++) {
    const float sum = quad_sum(l[r]);
    const int row = row0 + g + 8 * r;
    if (row >= nq) continue;
    const float inv = 1.0f / sum;
    float* dst = out + ((b * T + i0 + row) * H + h) * D + 2 * t;
#pragma unroll
    for (int dn = 0; dn < D / 8; dn++) {
      dst[dn * 8] = o[dn][2 * r] * inv;
      dst[dn * 8 + 1] = o[dn][2 * r + 1] * inv;
    }
    if (t == 0) lse[(b * H + h) * T + i0 + row] = m[r] + logf(sum);
  }
}

}  // namespace

void attention_forward_mma(Context& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                           const AttentionShape& s) {
  if (!check_inputs(s, {{q, "q"}, {k, "k"}, {v, "v"}})) return;
  const float scale = softmax_scale(s);
  const dim3 grid(unsigned(ceil_div(s.T, kBlockRows)), unsigned(s.H), unsigned(s.B));
  with_head_dim(s.D, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    static const size_t bytes =
        prepare_kernel(attention_forward_mma_kernel<D>, MmaForwardSmem<D>::bytes, "attention_forward_mma setup");
    launch("attention_forward_mma", attention_forward_mma_kernel<D>, grid, kThreads, bytes, ctx.stream(), out, lse, q,
           k, v, s.T, s.H, s.K, s.window, scale);
  });
}

}  // namespace replica::cuda
