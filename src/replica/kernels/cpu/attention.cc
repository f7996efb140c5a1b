// Tiled attention forward and backward on the CPU. For each (batch, head) and block of 64 queries, the
// visible key blocks are copied into small contiguous tiles (K and V transposed where the inner loop runs
// over keys) and multiplied by one register-blocked micro-kernel (multiply); every sum has a fixed order.
#include "replica/kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "replica/kernels/attention_mask.h"
#include "replica/kernels/cpu/attention_tiles.h"
#include "replica/kernels/cpu/simd.h"

namespace replica::cpu {

namespace {

using attention_mask::RowMask;
using simd::f16v;
using attention_tiles::BK;
using attention_tiles::BQ;
constexpr int64_t NV = BK / simd::kWidth;  // 16-lane vectors per key row (the softmax)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The products' register blocks: kRows rows by kBlock vectors of kLanes floats, sized to the vector registers.
// AVX-512 (32 registers of 16 floats) holds 4 rows × 64 columns: 16 accumulators and 4 vectors of B. With 16
// registers of 8 floats (AVX2) that block of 16-float vectors is 32 registers, spilled on every multiply-add
// (~3 GFLOP/s); 6 rows × 16 columns of 8-float vectors take 12 accumulators, 2 vectors of B and a broadcast.
// Each accumulator sums its own element in the same order either way, so the block changes no bit, given that each
// `acc += x * b` stays one fused multiply-add (-ffp-contract=fast), as it always was. GCC tuned for Zen leaves them
// unfused in a loop with a single accumulator of at most 256 bits (its avoid-fma-max-bits), so no block is one
// 8-lane vector: widths come in multiples of 16 floats (kStep vectors), so a block of one row has two with AVX2.
#if defined(__AVX512F__)
using vec = f16v;
constexpr int kLanes = 16, kRows = 4, kBlock = 4;
#else
using vec = simd::f8v;
constexpr int kLanes = 8, kRows = 6, kBlock = 2;
#endif
constexpr int kStep = simd::kWidth / kLanes;

// The operands of C[i, 0:cols] = C (or 0 without kAccumulate) + Σ_{k<n} A(i, k) · B[k, 0:cols] for i < rows, each
// sum one multiply-add per k in order. A(i, k) = A[i · ai + k · ak]: the rows of a row-major matrix (ak = 1) or its
// columns (ai = 1, the backward's Pᵀ and dSᵀ). B and C are row-major (strides ldb, ldc). Passed by value: read
// through a pointer, the operands would be read again after every store to C, which might have changed them.
template <bool kAccumulate>
struct Product {
  float* C;
  int64_t ldc;
  const float* A;
  int64_t ai, ak;
  const float* B;
  int64_t ldb, n;
};

// Rows [r, r + R) and vectors [c, c + CV) of C: R · CV accumulators, each B load shared by R rows.
template <int R, int CV, bool kAccumulate>
void multiply_block(const Product<kAccumulate> p, int64_t r, int64_t c) {
  vec acc[R][CV];
  for (int i = 0; i < R; i++)
    for (int v = 0; v < CV; v++)
      acc[i][v] = kAccumulate ? simd::load<vec>(p.C + (r + i) * p.ldc + (c + v) * kLanes) : vec{};
  const float* a = p.A + r * p.ai;
  int64_t k = 0;
  do {  // n ≥ 1; a loop that might not run leaves GCC keeping the accumulators in memory for its exit
    vec b[CV];
    for (int v = 0; v < CV; v++) b[v] = simd::load<vec>(p.B + k * p.ldb + (c + v) * kLanes);
    for (int i = 0; i < R; i++) {
      const float x = a[i * p.ai + k * p.ak];
      for (int v = 0; v < CV; v++) acc[i][v] += x * b[v];
    }
  } while (++k < p.n);
  for (int i = 0; i < R; i++)
    for (int v = 0; v < CV; v++) simd::store(p.C + (r + i) * p.ldc + (c + v) * kLanes, acc[i][v]);
}

// Vectors [c, c + CV) of all rows: kRows at a time, then 4 (AVX2: 64 = 10 · 6 + 4), then one.
template <int CV, bool kAccumulate>
void multiply_columns(const Product<kAccumulate> p, int64_t rows, int64_t c) {
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) multiply_block<kRows, CV>(p, r, c);
  if constexpr (kRows > 4)
    for (; r + 4 <= rows; r += 4) multiply_block<4, CV>(p, r, c);
  for (; r < rows; r++) multiply_block<1, CV>(p, r, c);
}

// The last `vectors` (< kBlock, a multiple of kStep) vectors of columns, from c: none with AVX2.
template <int CV, bool kAccumulate>
void multiply_last_columns(const Product<kAccumulate> p, int64_t rows, int64_t c, int64_t vectors) {
  if constexpr (CV > 0) {
    if (vectors == CV) return multiply_columns<CV>(p, rows, c);
    multiply_last_columns<CV - kStep>(p, rows, c, vectors);
  }
}

// cols: a multiple of 16.
template <bool kAccumulate>
void multiply(const Product<kAccumulate> p, int64_t rows, int64_t cols) {
  int64_t c = 0;
  for (; (c + kBlock) * kLanes <= cols; c += kBlock) multiply_columns<kBlock>(p, rows, c);
  multiply_last_columns<kBlock - kStep>(p, rows, c, cols / kLanes - c);
}

// S[r, 0:BK] = Σ_d A[r, d] · BT[d, 0:BK] for r < rows.
void scores_kernel(float* S, const float* A, const float* BT, int64_t rows, int64_t D) {
  multiply(Product<false>{S, BK, A, D, 1, BT, BK, D}, rows, BK);
}

// O[r, 0:D] += Σ_{j<n} P(r, j) · X[j, 0:D] for r < rows, with P(r, j) = P[r · pr + j · pj]; widths that are not a
// multiple of 16 take the scalar path, whose bits a block of one 8-lane vector would not keep (above).
void accumulate_kernel(float* O, const float* P, int64_t pr, int64_t pj, const float* X, int64_t rows, int64_t n,
                       int64_t D) {
  if (D % simd::kWidth != 0) {
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t d = 0; d < D; d++) O[r * D + d] += P[r * pr + j * pj] * X[j * D + d];
    return;
  }
  multiply(Product<true>{O, D, P, pr, pj, X, D, n}, rows, D);
}

// Rows [t0, t0 + n) of head `head` of x [T, heads, D] (already offset to batch b), times `scale`, into rows[n, D].
void load_rows(float* rows, const float* x, int64_t t0, int64_t n, int64_t heads, int64_t head, int64_t D,
               float scale) {
  for (int64_t r = 0; r < n; r++) {
    const float* src = x + ((t0 + r) * heads + head) * D;
    for (int64_t d = 0; d < D; d++) rows[r * D + d] = src[d] * scale;
  }
}

// The same rows, unscaled, transposed into cols[D, BK] (columns ≥ n zeroed): by 8 × 8 blocks where D allows.
void load_columns(float* cols, const float* x, int64_t t0, int64_t n, int64_t heads, int64_t head, int64_t D) {
  if (n < BK)
    for (int64_t d = 0; d < D; d++) std::fill(cols + d * BK + n, cols + (d + 1) * BK, 0.0f);
  const float* src = x + (t0 * heads + head) * D;
  const int64_t ld = heads * D;
  int64_t r = 0;
  if (D % 8 == 0)
    for (; r + 8 <= n; r += 8)
      for (int64_t d = 0; d < D; d += 8) simd::transpose8(cols + d * BK + r, BK, src + r * ld + d, ld);
  for (; r < n; r++)
    for (int64_t d = 0; d < D; d++) cols[d * BK + r] = src[r * ld + d];
}

// Sets row entries outside the visible keys [lo, hi) to −inf.
void mask_row(float* s, int64_t lo, int64_t hi) {
  for (int64_t j = 0; j < BK; j++)
    if (j < lo || j >= hi) s[j] = kNegInf;
}

}  // namespace

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s, const DocumentOffsets& docs) {
  // Positions i are key positions; the queries are rows [Q0, T) of the keys, held from 0 in q, out and lse.
  const int64_t T = s.T, Tq = s.rows_q(), Q0 = s.q_offset(), H = s.H, K = s.K, D = s.D, group = H / K;
  const int64_t q_tiles = (Tq + BQ - 1) / BQ;
  const float scale = 1.0f / std::sqrt(float(D));

#pragma omp parallel
  {
    std::vector<float> Q(BQ * D), KT(D * BK), V(BK * D), S(BQ * BK), acc(BQ * D), m(BQ), l(BQ);
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < s.B; b++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t qt = 0; qt < q_tiles; qt++) {
          const int64_t g = h / group, i0 = Q0 + qt * BQ, nq = std::min(BQ, T - i0);
          const float* kb = k + b * T * K * D;
          const float* vb = v + b * T * K * D;
          const RowMask row_mask(T, s.window, docs, b);  // keys [first_key(i), i] for query i
          load_rows(Q.data(), q + b * Tq * H * D, i0 - Q0, nq, H, h, D, scale);
          std::fill(acc.begin(), acc.end(), 0.0f);
          std::fill(m.begin(), m.end(), kNegInf);
          std::fill(l.begin(), l.end(), 0.0f);

          for (int64_t j0 = row_mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            load_columns(KT.data(), kb, j0, nk, K, g, D);
            load_rows(V.data(), vb, j0, nk, K, g, D, 1.0f);
            scores_kernel(S.data(), Q.data(), KT.data(), nq, D);
            // Online softmax: rescale what was accumulated when the running max grows.
            for (int64_t r = 0; r < nq; r++) {
              const int64_t i = i0 + r;
              float* srow = S.data() + r * BK;
              mask_row(srow, std::max(row_mask.first_key(i), j0) - j0, std::min(i + 1, j0 + nk) - j0);
              // The row's 16-lane max and sum, carried as native vectors (simd.h).
              simd::native row_max[simd::kParts], sum[simd::kParts] = {};
              for (int p = 0; p < simd::kParts; p++)
                row_max[p] = simd::load<simd::native>(srow + p * simd::kNativeWidth);
              for (int64_t c = 1; c < NV; c++)
                for (int p = 0; p < simd::kParts; p++)
                  row_max[p] =
                      simd::max(row_max[p], simd::load<simd::native>(srow + c * simd::kWidth + p * simd::kNativeWidth));
              const float m_new = std::max(m[r], simd::max(row_max));
              if (m_new == kNegInf) {  // no visible key of this row yet (its document starts after this tile)
                std::fill_n(srow, BK, 0.0f);
                continue;
              }
              for (int64_t c = 0; c < NV; c++)
                for (int p = 0; p < simd::kParts; p++) {
                  float* at = srow + c * simd::kWidth + p * simd::kNativeWidth;
                  const simd::native e = simd::exp(simd::load<simd::native>(at) - m_new);
                  simd::store(at, e);
                  sum[p] += e;
                }
              const float alpha = simd::exp(simd::splat<simd::native>(m[r] - m_new))[0];  // 0 while m was −inf
              l[r] = l[r] * alpha + simd::sum(sum);
              m[r] = m_new;
              for (int64_t d = 0; d < D; d++) acc[size_t(r * D + d)] *= alpha;
            }
            accumulate_kernel(acc.data(), S.data(), BK, 1, V.data(), nq, nk, D);
          }
          for (int64_t r = 0; r < nq; r++) {
            float* o = out + ((b * Tq + i0 - Q0 + r) * H + h) * D;
            const float inv = 1.0f / l[r];
            for (int64_t d = 0; d < D; d++) o[d] = acc[size_t(r * D + d)] * inv;
            lse[(b * H + h) * Tq + i0 - Q0 + r] = m[r] + std::log(l[r]);
          }
        }
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                        const float* q, const float* k, const float* v, const AttentionShape& s,
                        const DocumentOffsets& docs) {
  const int64_t B = s.B, T = s.T, Tq = s.rows_q(), Q0 = s.q_offset(), H = s.H, K = s.K, D = s.D, group = H / K;
  const float scale = 1.0f / std::sqrt(float(D));
  attention_tiles::KeyGradients key_gradients(dk, dv, s);

#pragma omp parallel
  {
    std::vector<float> Q(BQ * D), dO(BQ * D), KT(D * BK), Kr(BK * D), VT(D * BK), P(BQ * BK), dS(BQ * BK),
        dQ(BQ * D), delta(BQ), dK(size_t(T * D)), dV(size_t(T * D));
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < H; h++) {
        const int64_t g = h / group;
        const float* kb = k + b * T * K * D;
        const float* vb = v + b * T * K * D;
        const float* ob = out + b * Tq * H * D;          // query rows, from the first query
        const float* lse_bh = lse + (b * H + h) * Tq;    // of query rows
        const RowMask row_mask(T, s.window, docs, b);  // keys [first_key(i), i] for query i
        std::fill(dK.begin(), dK.end(), 0.0f);
        std::fill(dV.begin(), dV.end(), 0.0f);

        for (int64_t i0 = Q0; i0 < T; i0 += BQ) {
          const int64_t nq = std::min(BQ, T - i0);
          load_rows(Q.data(), q + b * Tq * H * D, i0 - Q0, nq, H, h, D, scale);
          load_rows(dO.data(), dout + b * Tq * H * D, i0 - Q0, nq, H, h, D, 1.0f);
          for (int64_t r = 0; r < nq; r++) {  // delta_i = Σ_d dO·O  (= Σ_j P·dP)
            const float* o = ob + ((i0 - Q0 + r) * H + h) * D;
            float sum = 0.0f;
            for (int64_t d = 0; d < D; d++) sum += dO[size_t(r * D + d)] * o[d];
            delta[size_t(r)] = sum;
          }
          std::fill(dQ.begin(), dQ.end(), 0.0f);

          for (int64_t j0 = row_mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            load_rows(Kr.data(), kb, j0, nk, K, g, D, 1.0f);
            load_columns(KT.data(), kb, j0, nk, K, g, D);
            load_columns(VT.data(), vb, j0, nk, K, g, D);
            scores_kernel(P.data(), Q.data(), KT.data(), nq, D);    // scaled scores
            scores_kernel(dS.data(), dO.data(), VT.data(), nq, D);  // dP = dO · Vᵀ
            for (int64_t r = 0; r < nq; r++) {  // P = exp(S − lse), dS = P ∘ (dP − delta)
              const int64_t i = i0 + r;
              float* p = P.data() + r * BK;
              float* ds = dS.data() + r * BK;
              mask_row(p, std::max(row_mask.first_key(i), j0) - j0, std::min(i + 1, j0 + nk) - j0);
              for (int64_t at = 0; at < BK; at += simd::kNativeWidth) {  // native vectors, as the forward
                const simd::native pc = simd::exp(simd::load<simd::native>(p + at) - lse_bh[i - Q0]);
                simd::store(p + at, pc);
                simd::store(ds + at, pc * (simd::load<simd::native>(ds + at) - delta[size_t(r)]));
              }
            }
            accumulate_kernel(dQ.data(), dS.data(), BK, 1, Kr.data(), nq, nk, D);          // dQ += dS · K
            accumulate_kernel(dV.data() + j0 * D, P.data(), 1, BK, dO.data(), nk, nq, D);  // dV += Pᵀ · dO
            accumulate_kernel(dK.data() + j0 * D, dS.data(), 1, BK, Q.data(), nk, nq, D);  // dK += dSᵀ · (scale·Q)
          }
          for (int64_t r = 0; r < nq; r++) {
            float* dst = dq + ((b * Tq + i0 - Q0 + r) * H + h) * D;
            for (int64_t d = 0; d < D; d++) dst[d] = dQ[size_t(r * D + d)] * scale;
          }
        }
        key_gradients.write(b, h, dK.data(), dV.data(), 1.0f);
      }
  }

  key_gradients.finish();
}

}  // namespace replica::cpu
