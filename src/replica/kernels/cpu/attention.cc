// Tiled attention forward and backward on the CPU. Tiles are copied into small contiguous buffers (K and
// V transposed where the inner loop runs over keys) so every inner loop is a unit-stride, vectorisable
// multiply-add with a fixed summation order.
#include "replica/kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace replica {

namespace {

constexpr int64_t BQ = 64;  // queries per tile
constexpr int64_t BK = 64;  // keys per tile
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// First key visible to query i.
inline int64_t first_key(int64_t i, int64_t window) { return window > 0 ? std::max<int64_t>(0, i - window + 1) : 0; }

// S[nq, BK] = A[nq, D] · BT[D, BK] (BT holds nk valid columns).
void tile_scores(float* S, const float* A, const float* BT, int64_t nq, int64_t nk, int64_t D) {
  for (int64_t i = 0; i < nq; i++) {
    float* s = S + i * BK;
    for (int64_t j = 0; j < nk; j++) s[j] = 0.0f;
    for (int64_t d = 0; d < D; d++) {
      float a = A[i * D + d];
      const float* bt = BT + d * BK;
      for (int64_t j = 0; j < nk; j++) s[j] += a * bt[j];
    }
  }
}

// Copies rows [t0, t0 + n) of head `head` from x [T, heads, D] (already offset to batch b) into out[n, D],
// and, if outT is given, the transpose into outT[D, BK].
void load_rows(float* out, float* outT, const float* x, int64_t t0, int64_t n, int64_t heads, int64_t head,
               int64_t D, float scale) {
  for (int64_t r = 0; r < n; r++) {
    const float* src = x + ((t0 + r) * heads + head) * D;
    for (int64_t d = 0; d < D; d++) {
      float value = src[d] * scale;
      if (out) out[r * D + d] = value;
      if (outT) outT[d * BK + r] = value;
    }
  }
}

}  // namespace

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s) {
  const int64_t T = s.T, H = s.H, K = s.K, D = s.D, group = H / K;
  const int64_t q_tiles = (T + BQ - 1) / BQ;
  const float scale = 1.0f / std::sqrt(float(D));

#pragma omp parallel
  {
    std::vector<float> Q(BQ * D), KT(D * BK), V(BK * D), S(BQ * BK), acc(BQ * D), m(BQ), l(BQ);
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < s.B; b++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t qt = 0; qt < q_tiles; qt++) {
          const int64_t g = h / group, i0 = qt * BQ, nq = std::min(BQ, T - i0);
          const float* qb = q + b * T * H * D;
          const float* kb = k + b * T * K * D;
          const float* vb = v + b * T * K * D;
          load_rows(Q.data(), nullptr, qb, i0, nq, H, h, D, scale);
          std::fill(acc.begin(), acc.end(), 0.0f);
          std::fill(m.begin(), m.end(), kNegInf);
          std::fill(l.begin(), l.end(), 0.0f);

          for (int64_t j0 = first_key(i0, s.window); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            load_rows(nullptr, KT.data(), kb, j0, nk, K, g, D, 1.0f);
            load_rows(V.data(), nullptr, vb, j0, nk, K, g, D, 1.0f);
            tile_scores(S.data(), Q.data(), KT.data(), nq, nk, D);
            for (int64_t r = 0; r < nq; r++) {
              const int64_t i = i0 + r;
              const int64_t lo = std::max(first_key(i, s.window), j0) - j0, hi = std::min(i + 1, j0 + nk) - j0;
              if (lo >= hi) continue;  // no visible key of this row in this tile
              float* srow = S.data() + r * BK;
              float row_max = kNegInf;
              for (int64_t j = lo; j < hi; j++) row_max = std::max(row_max, srow[j]);
              const float m_new = std::max(m[r], row_max);
              const float alpha = std::exp(m[r] - m_new);  // exp(-inf) = 0 on the first visible tile
              float sum = 0.0f;
              for (int64_t j = lo; j < hi; j++) {
                srow[j] = std::exp(srow[j] - m_new);
                sum += srow[j];
              }
              l[r] = l[r] * alpha + sum;
              m[r] = m_new;
              float* a = acc.data() + r * D;
              for (int64_t d = 0; d < D; d++) a[d] *= alpha;
              for (int64_t j = lo; j < hi; j++) {
                const float p = srow[j];
                const float* vr = V.data() + j * D;
                for (int64_t d = 0; d < D; d++) a[d] += p * vr[d];
              }
            }
          }
          for (int64_t r = 0; r < nq; r++) {
            float* o = out + ((b * T + i0 + r) * H + h) * D;
            const float inv = 1.0f / l[r];
            for (int64_t d = 0; d < D; d++) o[d] = acc[r * D + d] * inv;
            lse[(b * H + h) * T + i0 + r] = m[r] + std::log(l[r]);
          }
        }
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                        const float* q, const float* k, const float* v, const AttentionShape& s) {
  const int64_t B = s.B, T = s.T, H = s.H, K = s.K, D = s.D, group = H / K;
  const float scale = 1.0f / std::sqrt(float(D));
  // With GQA each query head writes its own dk/dv slice, summed over the group below.
  std::vector<float> dk_heads, dv_heads;
  float* dk_h = dk;
  float* dv_h = dv;
  if (group > 1) {
    dk_heads.assign(size_t(B * T * H * D), 0.0f);
    dv_heads.assign(size_t(B * T * H * D), 0.0f);
    dk_h = dk_heads.data();
    dv_h = dv_heads.data();
  }

#pragma omp parallel
  {
    std::vector<float> Q(BQ * D), dO(BQ * D), dO_T(D * BK), KT(D * BK), Kr(BK * D), VT(D * BK), S(BQ * BK),
        dP(BQ * BK), dQ(BQ * D), delta(BQ), dK(T * D), dV(T * D);
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < H; h++) {
        const int64_t g = h / group;
        const float* qb = q + b * T * H * D;
        const float* kb = k + b * T * K * D;
        const float* vb = v + b * T * K * D;
        const float* dob = dout + b * T * H * D;
        const float* ob = out + b * T * H * D;
        const float* lse_bh = lse + (b * H + h) * T;
        std::fill(dK.begin(), dK.end(), 0.0f);
        std::fill(dV.begin(), dV.end(), 0.0f);

        for (int64_t i0 = 0; i0 < T; i0 += BQ) {
          const int64_t nq = std::min(BQ, T - i0);
          load_rows(Q.data(), nullptr, qb, i0, nq, H, h, D, scale);
          load_rows(dO.data(), nullptr, dob, i0, nq, H, h, D, 1.0f);
          for (int64_t r = 0; r < nq; r++) {  // delta_i = Σ_d dO·O  (= Σ_j P·dP)
            const float* o = ob + ((i0 + r) * H + h) * D;
            float sum = 0.0f;
            for (int64_t d = 0; d < D; d++) sum += dO[r * D + d] * o[d];
            delta[r] = sum;
          }
          std::fill(dQ.begin(), dQ.end(), 0.0f);

          for (int64_t j0 = first_key(i0, s.window); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            load_rows(Kr.data(), KT.data(), kb, j0, nk, K, g, D, 1.0f);
            load_rows(nullptr, VT.data(), vb, j0, nk, K, g, D, 1.0f);
            tile_scores(S.data(), Q.data(), KT.data(), nq, nk, D);   // scaled scores
            tile_scores(dP.data(), dO.data(), VT.data(), nq, nk, D);  // dP = dO · V^T
            for (int64_t r = 0; r < nq; r++) {
              const int64_t i = i0 + r;
              const int64_t lo = std::max(first_key(i, s.window), j0) - j0, hi = std::min(i + 1, j0 + nk) - j0;
              float* p = S.data() + r * BK;
              float* ds = dP.data() + r * BK;
              for (int64_t j = 0; j < nk; j++) {
                const bool visible = j >= lo && j < hi;
                p[j] = visible ? std::exp(p[j] - lse_bh[i]) : 0.0f;
                ds[j] = p[j] * (ds[j] - delta[r]);  // dS = P ∘ (dP − delta)
              }
              // dQ_i += dS_ij · K_j   (scaled at the end)
              float* dq_r = dQ.data() + r * D;
              for (int64_t j = lo; j < hi; j++) {
                const float* kr = Kr.data() + j * D;
                for (int64_t d = 0; d < D; d++) dq_r[d] += ds[j] * kr[d];
              }
            }
            // dK_j += dS_ij · (scale·Q_i),  dV_j += P_ij · dO_i   (rows in order: a fixed summation order)
            for (int64_t r = 0; r < nq; r++) {
              const float* p = S.data() + r * BK;
              const float* ds = dP.data() + r * BK;
              const float* qr = Q.data() + r * D;
              const float* dor = dO.data() + r * D;
              for (int64_t j = 0; j < nk; j++) {
                if (p[j] == 0.0f && ds[j] == 0.0f) continue;
                float* dkj = dK.data() + (j0 + j) * D;
                float* dvj = dV.data() + (j0 + j) * D;
                for (int64_t d = 0; d < D; d++) {
                  dkj[d] += ds[j] * qr[d];
                  dvj[d] += p[j] * dor[d];
                }
              }
            }
          }
          for (int64_t r = 0; r < nq; r++) {
            float* dst = dq + ((b * T + i0 + r) * H + h) * D;
            for (int64_t d = 0; d < D; d++) dst[d] = dQ[r * D + d] * scale;
          }
        }
        // Write this head's dK/dV: straight into dk/dv for MHA, into its own slice for GQA.
        const int64_t heads_out = group > 1 ? H : K, slot = group > 1 ? h : g;
        for (int64_t t = 0; t < T; t++)
          for (int64_t d = 0; d < D; d++) {
            dk_h[((b * T + t) * heads_out + slot) * D + d] = dK[t * D + d];
            dv_h[((b * T + t) * heads_out + slot) * D + d] = dV[t * D + d];
          }
      }
  }

  if (group > 1) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t bt = 0; bt < B * T; bt++)
      for (int64_t g = 0; g < K; g++)
        for (int64_t d = 0; d < D; d++) {
          float sk = 0.0f, sv = 0.0f;
          for (int64_t h = g * group; h < (g + 1) * group; h++) {
            sk += dk_heads[size_t((bt * H + h) * D + d)];
            sv += dv_heads[size_t((bt * H + h) * D + d)];
          }
          dk[(bt * K + g) * D + d] = sk;
          dv[(bt * K + g) * D + d] = sv;
        }
  }
}

}  // namespace replica
