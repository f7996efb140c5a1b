// Flash-style attention forward and backward in fp32 on CUDA cores. Each block stages a 32-query tile and
// a 32-key tile of one head in shared memory; scores, probabilities and products are computed from there.
// Rows of K and V tiles are padded by one float so that threads of a warp reading different keys hit
// different banks.
//   forward:   block (query tile, head, batch): online softmax over the visible key tiles.
//   backward:  delta_i = Σ_d dO·O;  block (key tile, KV head, batch) accumulates dK, dV over the visible
//              query tiles of every head in the group;  block (query tile, head, batch) accumulates dQ.
// This is the correct, deterministic baseline; attention_mma.cu and attention_wgmma.cu are the tensor-core
// variants (docs/gpu.md).
#include <cmath>
#include <stdexcept>

#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/attention_mask.h"
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

namespace {

using attention_mask::RowMask;
using attention_mask::visible_from;

constexpr int kTile = 32;      // queries per query tile and keys per key tile
constexpr int kThreads = 128;  // threads per block
constexpr int kMaxD = 256;

// first[r] = the first key query t0 + r sees, for the rows of a tile.
__device__ void load_first_keys(int64_t* first, const RowMask& row_mask, int64_t t0) {
  if (threadIdx.x < kTile) first[threadIdx.x] = row_mask.first_key(t0 + threadIdx.x);
}

// Copies rows [t0, t0 + n) of head `head` of x [T, heads, D] (offset to the batch) into tile[kTile][ld]
// times `scale`; rows ≥ n are zeroed.
__device__ void load_tile(float* tile, int ld, const float* x, int64_t t0, int64_t n, int64_t heads, int64_t head,
                          int64_t D, float scale) {
  for (int64_t e = threadIdx.x; e < kTile * D; e += blockDim.x) {
    const int64_t r = e / D, d = e % D;
    tile[r * ld + d] = r < n ? x[((t0 + r) * heads + head) * D + d] * scale : 0.0f;
  }
}

__device__ inline float dot(const float* a, const float* b, int64_t D) {
  float sum = 0.0f;
  for (int64_t d = 0; d < D; d++) sum += a[d] * b[d];
  return sum;
}

// Shared memory: Q [kTile][D], K [kTile][D+1], V [kTile][D+1], acc [kTile][D], S [kTile][kTile+1], m, l, alpha.
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(float* out, float* lse, const float* q,
                                                                     const float* k, const float* v, int64_t T,
                                                                     int64_t Q0, int64_t H, int64_t K, int64_t D,
                                                                     int64_t window, DocumentOffsets docs,
                                                                     float scale) {
  float* smem = reinterpret_cast<float*>(dynamic_shared_memory());
  __shared__ int64_t first[kTile];  // the first key each query row sees
  // Positions are key positions; the row's queries are [Q0, T), held from 0 in q, out and lse (Tq of them).
  const int64_t Tq = T - Q0, i0 = Q0 + int64_t(blockIdx.x) * kTile, h = blockIdx.y, b = blockIdx.z, g = h / (H / K);
  const RowMask row_mask(T, window, docs, b);
  const int64_t nq = min(int64_t(kTile), T - i0);
  const int ldk = int(D) + 1, lds = kTile + 1;
  float* Qs = smem;
  float* Ks = Qs + kTile * D;
  float* Vs = Ks + kTile * ldk;
  float* acc = Vs + kTile * ldk;
  float* S = acc + kTile * D;
  float* m = S + kTile * lds;
  float* l = m + kTile;
  float* alpha = l + kTile;
  const float* kb = k + b * T * K * D;
  const float* vb = v + b * T * K * D;

  load_tile(Qs, int(D), q + b * Tq * H * D, i0 - Q0, nq, H, h, D, scale);
  load_first_keys(first, row_mask, i0);
  for (int64_t e = threadIdx.x; e < kTile * D; e += blockDim.x) acc[e] = 0.0f;
  if (threadIdx.x < kTile) {
    m[threadIdx.x] = -INFINITY;
    l[threadIdx.x] = 0.0f;
  }

  for (int64_t j0 = row_mask.first_key(i0); j0 < i0 + nq; j0 += kTile) {
    const int64_t nk = min(int64_t(kTile), i0 + nq - j0);
    __syncthreads();  // the previous tile's K, V and S are no longer read
    load_tile(Ks, ldk, kb, j0, nk, K, g, D, 1.0f);
    load_tile(Vs, ldk, vb, j0, nk, K, g, D, 1.0f);
    __syncthreads();
    // Scaled scores of visible pairs, −inf elsewhere.
    for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
      const int r = e / kTile, c = e % kTile;
      const bool seen = r < nq && c < nk && visible_from(i0 + r, j0 + c, first[r]);
      S[r * lds + c] = seen ? dot(Qs + r * D, Ks + c * ldk, D) : -INFINITY;
    }
    __syncthreads();
    // Online softmax, one thread per query row: rescale what was accumulated when the running max grows.
    if (threadIdx.x < kTile) {
      const int r = threadIdx.x;
      float* srow = S + r * lds;
      float m_new = m[r];
      for (int c = 0; c < kTile; c++) m_new = fmaxf(m_new, srow[c]);
      if (m_new == -INFINITY) {  // no visible key for this row yet
        for (int c = 0; c < kTile; c++) srow[c] = 0.0f;
        alpha[r] = 1.0f;
      } else {
        float sum = 0.0f;
        for (int c = 0; c < kTile; c++) {
          srow[c] = expf(srow[c] - m_new);
          sum += srow[c];
        }
        alpha[r] = expf(m[r] - m_new);  // 0 while m was −inf
        l[r] = l[r] * alpha[r] + sum;
        m[r] = m_new;
      }
    }
    __syncthreads();
    // acc = acc·alpha + P·V
    for (int64_t e = threadIdx.x; e < kTile * D; e += blockDim.x) {
      const int64_t r = e / D, d = e % D;
      float sum = acc[e] * alpha[r];
      for (int c = 0; c < kTile; c++) sum += S[r * lds + c] * Vs[c * ldk + d];
      acc[e] = sum;
    }
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < nq * D; e += blockDim.x) {
    const int64_t r = e / D, d = e % D;
    out[((b * Tq + i0 - Q0 + r) * H + h) * D + d] = acc[e] / l[r];
  }
  if (threadIdx.x < nq) lse[(b * H + h) * Tq + i0 - Q0 + threadIdx.x] = m[threadIdx.x] + logf(l[threadIdx.x]);
}

// delta[b, h, t] = Σ_d dO·O, one warp per row, a fixed shuffle tree.
__global__ void attention_delta_kernel(float* delta, const float* dout, const float* out, int64_t T, int64_t H,
                                       int64_t D, int64_t rows) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;  // (b·T + t)·H + h
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int64_t d = lane; d < D; d += 32) sum += dout[row * D + d] * out[row * D + d];
  sum = warp_sum(sum);
  const int64_t h = row % H, bt = row / H, t = bt % T, b = bt / T;
  if (lane == 0) delta[(b * H + h) * T + t] = sum;
}

// Probabilities P = exp(S − lse) and dS = P ∘ (dO·Vᵀ − delta) of a (query tile, key tile) pair, both
// [kTile][kTile+1], zero where masked (`first`: the first key each query row sees). Q is already scaled.
__device__ void probabilities_and_dscores(float* P, float* dS, const float* Qs, const float* dOs, const float* Ks,
                                          const float* Vs, const float* lse_s, const float* delta_s,
                                          const int64_t* first, int64_t i0, int64_t nq, int64_t j0, int64_t nk,
                                          int64_t D) {
  const int ldk = int(D) + 1, lds = kTile + 1;
  for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
    const int r = e / kTile, c = e % kTile;
    float p = 0.0f, ds = 0.0f;
    if (r < nq && c < nk && visible_from(i0 + r, j0 + c, first[r])) {
      p = expf(dot(Qs + r * D, Ks + c * ldk, D) - lse_s[r]);
      ds = p * (dot(dOs + r * D, Vs + c * ldk, D) - delta_s[r]);
    }
    if (P) P[r * lds + c] = p;
    dS[r * lds + c] = ds;
  }
}

// Copies lse and delta of rows [i0, i0 + n) of head h.
__device__ void load_row_stats(float* lse_s, float* delta_s, const float* lse, const float* delta, int64_t base,
                               int64_t n) {
  if (threadIdx.x < kTile) {
    lse_s[threadIdx.x] = threadIdx.x < n ? lse[base + threadIdx.x] : 0.0f;
    delta_s[threadIdx.x] = threadIdx.x < n ? delta[base + threadIdx.x] : 0.0f;
  }
}

// Shared memory: K, V [kTile][D+1]; Q, dO, dK, dV [kTile][D]; P, dS [kTile][kTile+1]; lse, delta [kTile].
__global__ void __launch_bounds__(kThreads) attention_dkdv_kernel(float* dk, float* dv, const float* dout,
                                                                  const float* lse, const float* delta,
                                                                  const float* q, const float* k, const float* v,
                                                                  int64_t T, int64_t Q0, int64_t H, int64_t K,
                                                                  int64_t D, int64_t window, DocumentOffsets docs,
                                                                  float scale) {
  float* smem = reinterpret_cast<float*>(dynamic_shared_memory());
  __shared__ int64_t first[kTile];  // the first key each row of the query tile sees
  const int64_t Tq = T - Q0, j0 = int64_t(blockIdx.x) * kTile, g = blockIdx.y, b = blockIdx.z, group = H / K;
  const RowMask row_mask(T, window, docs, b);
  const int64_t nk = min(int64_t(kTile), T - j0);
  const int ldk = int(D) + 1, lds = kTile + 1;
  float* Ks = smem;
  float* Vs = Ks + kTile * ldk;
  float* Qs = Vs + kTile * ldk;
  float* dOs = Qs + kTile * D;
  float* dK = dOs + kTile * D;
  float* dV = dK + kTile * D;
  float* P = dV + kTile * D;
  float* dS = P + kTile * lds;
  float* lse_s = dS + kTile * lds;
  float* delta_s = lse_s + kTile;

  load_tile(Ks, ldk, k + b * T * K * D, j0, nk, K, g, D, 1.0f);
  load_tile(Vs, ldk, v + b * T * K * D, j0, nk, K, g, D, 1.0f);
  for (int64_t e = threadIdx.x; e < kTile * D; e += blockDim.x) dK[e] = dV[e] = 0.0f;
  // Queries that see any key of this tile: j0 ≤ i < the end of the last key's (j0 + nk − 1 + W − 1, its document).
  const int64_t i_end = row_mask.query_end(j0 + nk - 1);
  // The first query tile holding a query ≥ j0 (tiles start at Q0).
  const int64_t i_first = Q0 + max(j0 - Q0, int64_t(0)) / kTile * kTile;

  for (int64_t h = g * group; h < (g + 1) * group; h++)
    for (int64_t i0 = i_first; i0 < i_end; i0 += kTile) {
      const int64_t nq = min(int64_t(kTile), T - i0);
      __syncthreads();  // the previous tile's Q, dO, P and dS are no longer read
      load_tile(Qs, int(D), q + b * Tq * H * D, i0 - Q0, nq, H, h, D, scale);
      load_tile(dOs, int(D), dout + b * Tq * H * D, i0 - Q0, nq, H, h, D, 1.0f);
      load_row_stats(lse_s, delta_s, lse, delta, (b * H + h) * Tq + i0 - Q0, nq);
      load_first_keys(first, row_mask, i0);
      __syncthreads();
      probabilities_and_dscores(P, dS, Qs, dOs, Ks, Vs, lse_s, delta_s, first, i0, nq, j0, nk, D);
      __syncthreads();
      // dV += Pᵀ·dO,  dK += dSᵀ·(scale·Q)
      for (int64_t e = threadIdx.x; e < kTile * D; e += blockDim.x) {
        const int64_t c = e / D, d = e % D;
        float sv = dV[e], sk = dK[e];
        for (int r = 0; r < kTile; r++) {
          sv += P[r * lds + c] * dOs[r * D + d];
          sk += dS[r * lds + c] * Qs[r * D + d];
        }
        dV[e] = sv;
        dK[e] = sk;
      }
    }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < nk * D; e += blockDim.x) {
    const int64_t c = e / D, d = e % D, at = ((b * T + j0 + c) * K + g) * D + d;
    dk[at] = dK[e];
    dv[at] = dV[e];
  }
}

// Shared memory: K, V [kTile][D+1]; Q, dO, dQ [kTile][D]; dS [kTile][kTile+1]; lse, delta [kTile].
__global__ void __launch_bounds__(kThreads) attention_dq_kernel(float* dq, const float* dout, const float* lse,
                                                                const float* delta, const float* q, const float* k,
                                                                const float* v, int64_t T, int64_t Q0, int64_t H,
                                                                int64_t K, int64_t D, int64_t window,
                                                                DocumentOffsets docs, float scale) {
  float* smem = reinterpret_cast<float*>(dynamic_shared_memory());
  __shared__ int64_t first[kTile];  // the first key each query row sees
  const int64_t Tq = T - Q0, i0 = Q0 + int64_t(blockIdx.x) * kTile, h = blockIdx.y, b = blockIdx.z, g = h / (H / K);
  const RowMask row_mask(T, window, docs, b);
  const int64_t nq = min(int64_t(kTile), T - i0);
  const int ldk = int(D) + 1, lds = kTile + 1;
  float* Ks = smem;
  float* Vs = Ks + kTile * ldk;
  float* Qs = Vs + kTile * ldk;
  float* dOs = Qs + kTile * D;
  float* dQ = dOs + kTile * D;
  float* dS = dQ + kTile * D;
  float* lse_s = dS + kTile * lds;
  float* delta_s = lse_s + kTile;

  load_tile(Qs, int(D), q + b * Tq * H * D, i0 - Q0, nq, H, h, D, scale);
  load_tile(dOs, int(D), dout + b * Tq * H * D, i0 - Q0, nq, H, h, D, 1.0f);
  load_row_stats(lse_s, delta_s, lse, delta, (b * H + h) * Tq + i0 - Q0, nq);
  load_first_keys(first, row_mask, i0);
  for (int64_t e = threadIdx.x; e < kTile * D; e += blockDim.x) dQ[e] = 0.0f;

  for (int64_t j0 = row_mask.first_key(i0); j0 < i0 + nq; j0 += kTile) {
    const int64_t nk = min(int64_t(kTile), i0 + nq - j0);
    __syncthreads();
    load_tile(Ks, ldk, k + b * T * K * D, j0, nk, K, g, D, 1.0f);
    load_tile(Vs, ldk, v + b * T * K * D, j0, nk, K, g, D, 1.0f);
    __syncthreads();
    probabilities_and_dscores(nullptr, dS, Qs, dOs, Ks, Vs, lse_s, delta_s, first, i0, nq, j0, nk, D);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < kTile * D; e += blockDim.x) {  // dQ += dS·K
      const int64_t r = e / D, d = e % D;
      float sum = dQ[e];
      for (int c = 0; c < kTile; c++) sum += dS[r * lds + c] * Ks[c * ldk + d];
      dQ[e] = sum;
    }
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < nq * D; e += blockDim.x) {
    const int64_t r = e / D, d = e % D;
    dq[((b * Tq + i0 - Q0 + r) * H + h) * D + d] = dQ[e] * scale;
  }
}

// Raises a kernel's dynamic shared-memory limit (needed above 48 KB) and returns the bytes.
template <typename Kernel>
size_t shared_bytes(Kernel kernel, int64_t floats) {
  const size_t bytes = size_t(floats) * sizeof(float);
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
             "attention shared memory limit");
  return bytes;
}

void check_shape(const AttentionShape& s) {
  if (s.D > kMaxD || s.K <= 0 || s.H % s.K != 0)
    throw std::runtime_error("attention: need head dim ≤ 256 and query heads a multiple of KV heads");
}

}  // namespace

void attention_forward(Context& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s, const DocumentOffsets& docs) {
  check_shape(s);
  if (s.B * s.T == 0) return;
  const int64_t D = s.D;
  const size_t bytes = shared_bytes(attention_forward_kernel, 2 * kTile * D + 2 * kTile * (D + 1) +
                                                                  kTile * (kTile + 1) + 3 * kTile);
  const dim3 grid(unsigned(ceil_div(s.rows_q(), kTile)), unsigned(s.H), unsigned(s.B));
  launch("attention_forward", attention_forward_kernel, grid, kThreads, bytes, ctx.stream(), out, lse, q, k, v, s.T,
         s.q_offset(), s.H, s.K, D, s.window, docs, 1.0f / std::sqrt(float(D)));
}

void attention_delta(Context& ctx, float* delta, const float* dout, const float* out, const AttentionShape& s) {
  const int64_t rows = s.B * s.rows_q() * s.H;
  if (rows == 0) return;
  launch("attention_delta", attention_delta_kernel, unsigned(ceil_div(rows * 32, 256)), 256, 0, ctx.stream(), delta,
         dout, out, s.rows_q(), s.H, s.D, rows);
}

void attention_backward(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                        const float* lse, const float* q, const float* k, const float* v, const AttentionShape& s,
                        const DocumentOffsets& docs) {
  check_shape(s);
  if (s.B * s.T == 0) return;
  const int64_t D = s.D;
  const float scale = 1.0f / std::sqrt(float(D));
  Scratch<float> delta(ctx, size_t(s.B * s.H * s.rows_q()));
  attention_delta(ctx, delta.get(), dout, out, s);

  const int64_t pair = kTile * (kTile + 1);
  const size_t dkdv_bytes =
      shared_bytes(attention_dkdv_kernel, 2 * kTile * (D + 1) + 4 * kTile * D + 2 * pair + 2 * kTile);
  const dim3 kv_grid(unsigned(ceil_div(s.T, kTile)), unsigned(s.K), unsigned(s.B));
  launch("attention_dkdv", attention_dkdv_kernel, kv_grid, kThreads, dkdv_bytes, ctx.stream(), dk, dv, dout, lse,
         delta.get(), q, k, v, s.T, s.q_offset(), s.H, s.K, D, s.window, docs, scale);

  const size_t dq_bytes = shared_bytes(attention_dq_kernel, 2 * kTile * (D + 1) + 3 * kTile * D + pair + 2 * kTile);
  const dim3 q_grid(unsigned(ceil_div(s.rows_q(), kTile)), unsigned(s.H), unsigned(s.B));
  launch("attention_dq", attention_dq_kernel, q_grid, kThreads, dq_bytes, ctx.stream(), dq, dout, lse, delta.get(), q,
         k, v, s.T, s.q_offset(), s.H, s.K, D, s.window, docs, scale);
}

}  // namespace replica::cuda
