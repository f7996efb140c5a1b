// Tiled attention forward and backward on the CPU. For each (batch, head) and block of 64 queries, the
// visible key blocks are copied into small contiguous tiles (K and V transposed where the inner loop runs
// over keys) and multiplied by two register-blocked micro-kernels; every sum has a fixed order.
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
constexpr int64_t NV = BK / simd::kWidth;  // vectors per key row
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// S[r, 0:BK] = Σ_d A[r, d] · BT[d, 0:BK] for r < rows. Four rows at a time share each BT load.
void scores_kernel(float* S, const float* A, const float* BT, int64_t rows, int64_t D) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    f16v acc[4][NV] = {};
    for (int64_t d = 0; d < D; d++) {
      f16v b[NV];
      for (int64_t c = 0; c < NV; c++) b[c] = simd::load(BT + d * BK + c * simd::kWidth);
      for (int64_t i = 0; i < 4; i++) {
        const float a = A[(r + i) * D + d];
        for (int64_t c = 0; c < NV; c++) acc[i][c] += a * b[c];
      }
    }
    for (int64_t i = 0; i < 4; i++)
      for (int64_t c = 0; c < NV; c++) simd::store(S + (r + i) * BK + c * simd::kWidth, acc[i][c]);
  }
  for (; r < rows; r++) {
    f16v acc[NV] = {};
    for (int64_t d = 0; d < D; d++)
      for (int64_t c = 0; c < NV; c++) acc[c] += A[r * D + d] * simd::load(BT + d * BK + c * simd::kWidth);
    for (int64_t c = 0; c < NV; c++) simd::store(S + r * BK + c * simd::kWidth, acc[c]);
  }
}

// O[r, 0:D] += Σ_{j<n} P[r, j] · X[j, 0:D] for r < rows (P has row stride BK). D is covered in chunks of
// CV vectors, four rows at a time; widths that are not a multiple of 16 take the scalar path.
template <int CV>
void accumulate_chunk(float* O, const float* P, const float* X, int64_t rows, int64_t n, int64_t D, int64_t d0) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    f16v acc[4][CV];
    for (int64_t i = 0; i < 4; i++)
      for (int64_t c = 0; c < CV; c++) acc[i][c] = simd::load(O + (r + i) * D + d0 + c * simd::kWidth);
    for (int64_t j = 0; j < n; j++) {
      f16v x[CV];
      for (int64_t c = 0; c < CV; c++) x[c] = simd::load(X + j * D + d0 + c * simd::kWidth);
      for (int64_t i = 0; i < 4; i++) {
        const float p = P[(r + i) * BK + j];
        for (int64_t c = 0; c < CV; c++) acc[i][c] += p * x[c];
      }
    }
    for (int64_t i = 0; i < 4; i++)
      for (int64_t c = 0; c < CV; c++) simd::store(O + (r + i) * D + d0 + c * simd::kWidth, acc[i][c]);
  }
  for (; r < rows; r++) {
    f16v acc[CV];
    for (int64_t c = 0; c < CV; c++) acc[c] = simd::load(O + r * D + d0 + c * simd::kWidth);
    for (int64_t j = 0; j < n; j++)
      for (int64_t c = 0; c < CV; c++) acc[c] += P[r * BK + j] * simd::load(X + j * D + d0 + c * simd::kWidth);
    for (int64_t c = 0; c < CV; c++) simd::store(O + r * D + d0 + c * simd::kWidth, acc[c]);
  }
}

void accumulate_kernel(float* O, const float* P, const float* X, int64_t rows, int64_t n, int64_t D) {
  if (D % simd::kWidth != 0) {
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t d = 0; d < D; d++) O[r * D + d] += P[r * BK + j] * X[j * D + d];
    return;
  }
  int64_t d0 = 0;
  for (; d0 + 4 * simd::kWidth <= D; d0 += 4 * simd::kWidth) accumulate_chunk<4>(O, P, X, rows, n, D, d0);
  switch ((D - d0) / simd::kWidth) {
    case 3: accumulate_chunk<3>(O, P, X, rows, n, D, d0); break;
    case 2: accumulate_chunk<2>(O, P, X, rows, n, D, d0); break;
    case 1: accumulate_chunk<1>(O, P, X, rows, n, D, d0); break;
    default: break;
  }
}

// Copies rows [t0, t0 + n) of head `head` of x [T, heads, D] (already offset to batch b), times `scale`,
// into rows[n, D] and/or the transpose cols[D, BK] (columns ≥ n zeroed).
void load_tile(float* rows, float* cols, const float* x, int64_t t0, int64_t n, int64_t heads, int64_t head,
               int64_t D, float scale) {
  if (cols && n < BK)
    for (int64_t d = 0; d < D; d++) std::fill(cols + d * BK + n, cols + (d + 1) * BK, 0.0f);
  for (int64_t r = 0; r < n; r++) {
    const float* src = x + ((t0 + r) * heads + head) * D;
    for (int64_t d = 0; d < D; d++) {
      const float value = src[d] * scale;
      if (rows) rows[r * D + d] = value;
      if (cols) cols[d * BK + r] = value;
    }
  }
}

// out[j, r] = in[r, j] for r < rows, j < BK (row strides BK).
void transpose_tile(float* out, const float* in, int64_t rows) {
  for (int64_t j = 0; j < BK; j++)
    for (int64_t r = 0; r < rows; r++) out[j * BK + r] = in[r * BK + j];
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
          load_tile(Q.data(), nullptr, q + b * Tq * H * D, i0 - Q0, nq, H, h, D, scale);
          std::fill(acc.begin(), acc.end(), 0.0f);
          std::fill(m.begin(), m.end(), kNegInf);
          std::fill(l.begin(), l.end(), 0.0f);

          for (int64_t j0 = row_mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            load_tile(nullptr, KT.data(), kb, j0, nk, K, g, D, 1.0f);
            load_tile(V.data(), nullptr, vb, j0, nk, K, g, D, 1.0f);
            scores_kernel(S.data(), Q.data(), KT.data(), nq, D);
            // Online softmax: rescale what was accumulated when the running max grows.
            for (int64_t r = 0; r < nq; r++) {
              const int64_t i = i0 + r;
              float* srow = S.data() + r * BK;
              mask_row(srow, std::max(row_mask.first_key(i), j0) - j0, std::min(i + 1, j0 + nk) - j0);
              f16v row_max = simd::load(srow);
              for (int64_t c = 1; c < NV; c++) row_max = simd::max(row_max, simd::load(srow + c * simd::kWidth));
              const float m_new = std::max(m[r], simd::max(row_max));
              if (m_new == kNegInf) {  // no visible key of this row yet (its document starts after this tile)
                std::fill_n(srow, BK, 0.0f);
                continue;
              }
              f16v sum = {};
              for (int64_t c = 0; c < NV; c++) {
                const f16v p = simd::exp(simd::load(srow + c * simd::kWidth) - m_new);
                simd::store(srow + c * simd::kWidth, p);
                sum += p;
              }
              const float alpha = simd::exp(simd::splat(m[r] - m_new))[0];  // 0 while m was −inf
              l[r] = l[r] * alpha + simd::sum(sum);
              m[r] = m_new;
              for (int64_t d = 0; d < D; d++) acc[size_t(r * D + d)] *= alpha;
            }
            accumulate_kernel(acc.data(), S.data(), V.data(), nq, nk, D);
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
        PT(BK * BK), dST(BK * BK), dQ(BQ * D), delta(BQ), dK(size_t(T * D)), dV(size_t(T * D));
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
          load_tile(Q.data(), nullptr, q + b * Tq * H * D, i0 - Q0, nq, H, h, D, scale);
          load_tile(dO.data(), nullptr, dout + b * Tq * H * D, i0 - Q0, nq, H, h, D, 1.0f);
          for (int64_t r = 0; r < nq; r++) {  // delta_i = Σ_d dO·O  (= Σ_j P·dP)
            const float* o = ob + ((i0 - Q0 + r) * H + h) * D;
            float sum = 0.0f;
            for (int64_t d = 0; d < D; d++) sum += dO[size_t(r * D + d)] * o[d];
            delta[size_t(r)] = sum;
          }
          std::fill(dQ.begin(), dQ.end(), 0.0f);

          for (int64_t j0 = row_mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            load_tile(Kr.data(), KT.data(), kb, j0, nk, K, g, D, 1.0f);
            load_tile(nullptr, VT.data(), vb, j0, nk, K, g, D, 1.0f);
            scores_kernel(P.data(), Q.data(), KT.data(), nq, D);    // scaled scores
            scores_kernel(dS.data(), dO.data(), VT.data(), nq, D);  // dP = dO · Vᵀ
            for (int64_t r = 0; r < nq; r++) {  // P = exp(S − lse), dS = P ∘ (dP − delta)
              const int64_t i = i0 + r;
              float* p = P.data() + r * BK;
              float* ds = dS.data() + r * BK;
              mask_row(p, std::max(row_mask.first_key(i), j0) - j0, std::min(i + 1, j0 + nk) - j0);
              for (int64_t c = 0; c < NV; c++) {
                const f16v pc = simd::exp(simd::load(p + c * simd::kWidth) - lse_bh[i - Q0]);
                simd::store(p + c * simd::kWidth, pc);
                simd::store(ds + c * simd::kWidth, pc * (simd::load(ds + c * simd::kWidth) - delta[size_t(r)]));
              }
            }
            accumulate_kernel(dQ.data(), dS.data(), Kr.data(), nq, nk, D);  // dQ += dS · K
            transpose_tile(PT.data(), P.data(), nq);
            transpose_tile(dST.data(), dS.data(), nq);
            accumulate_kernel(dV.data() + j0 * D, PT.data(), dO.data(), nk, nq, D);  // dV += Pᵀ · dO
            accumulate_kernel(dK.data() + j0 * D, dST.data(), Q.data(), nk, nq, D);  // dK += dSᵀ · (scale·Q)
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
