// Attention with bf16 products on the CPU (attention.h, "bf16 products"): the fp32 kernel's tiles and online
// softmax, with every product a bf16 dot product accumulated in fp32 (AVX512-BF16's vdpbf16ps, one instruction per
// 32 multiply-adds; an fp32 emulation of it elsewhere).
//
// Tiles are held transposed, keys by queries (Sᵀ = K·Qᵀ), so that the 16 lanes of a vector are 16 queries: the
// softmax's running max and sum, the lse and delta of a query are lanes, not horizontal reductions, and every
// product is one shape, C[M, N] (+)= A[M, 2P] · B[2P, N] with A's rows in bf16 and B in pairs of rows (B's rows 2p
// and 2p + 1 interleaved, the operand layout of vdpbf16ps). Before the tiles, k and v are rounded once into the
// layouts the products read (key rows, and transposed), shared by all query heads of a KV head.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "replica/core/bf16.h"
#include "replica/kernels/attention_mask.h"
#include "replica/kernels/cpu/attention.h"
#include "replica/kernels/cpu/attention_tiles.h"
#include "replica/kernels/cpu/simd.h"

#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

namespace replica::cpu {

namespace {

using attention_tiles::BK;
using attention_tiles::BQ;
using attention_mask::RowMask;
using simd::f16v;
using simd::i16v;
constexpr int64_t NV = BQ / simd::kWidth;  // vectors per row of a [keys, queries] tile
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ---- the product: C[m, 0:16·CV] (+)= Σ_p A[m, 2p] · B[p, n, 0] + A[m, 2p + 1] · B[p, n, 1] ------------------
// A: bf16 rows of stride lda. B: pairs of rows, B + p · 2 · ldb the pair p (ldb columns). Four rows of C at a time
// share each load of B.

#if defined(__AVX512BF16__)
inline __m512bh broadcast_pair(const bf16* a) {
  int32_t bits;
  std::memcpy(&bits, a, sizeof(bits));
  return (__m512bh)_mm512_set1_epi32(bits);
}

template <int CV>
void dot_columns(float* C, int64_t ldc, const bf16* A, int64_t lda, const bf16* B, int64_t ldb, int64_t rows,
                 int64_t pairs, bool accumulate) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    __m512 c[4][CV];
    for (int i = 0; i < 4; i++)
      for (int v = 0; v < CV; v++)
        c[i][v] = accumulate ? _mm512_loadu_ps(C + (r + i) * ldc + v * 16) : _mm512_setzero_ps();
    for (int64_t p = 0; p < pairs; p++) {
      __m512bh b[CV];
      for (int v = 0; v < CV; v++) b[v] = (__m512bh)_mm512_loadu_si512(B + (p * ldb + v * 16) * 2);
      for (int i = 0; i < 4; i++) {
        const __m512bh a = broadcast_pair(A + (r + i) * lda + 2 * p);
        for (int v = 0; v < CV; v++) c[i][v] = _mm512_dpbf16_ps(c[i][v], a, b[v]);
      }
    }
    for (int i = 0; i < 4; i++)
      for (int v = 0; v < CV; v++) _mm512_storeu_ps(C + (r + i) * ldc + v * 16, c[i][v]);
  }
  for (; r < rows; r++) {
    __m512 c[CV];
    for (int v = 0; v < CV; v++) c[v] = accumulate ? _mm512_loadu_ps(C + r * ldc + v * 16) : _mm512_setzero_ps();
    for (int64_t p = 0; p < pairs; p++) {
      const __m512bh a = broadcast_pair(A + r * lda + 2 * p);
      for (int v = 0; v < CV; v++)
        c[v] = _mm512_dpbf16_ps(c[v], a, (__m512bh)_mm512_loadu_si512(B + (p * ldb + v * 16) * 2));
    }
    for (int v = 0; v < CV; v++) _mm512_storeu_ps(C + r * ldc + v * 16, c[v]);
  }
}
#else
// Without AVX512-BF16: the same products in fp32 (the products of two bf16 values are exact in fp32).
template <int CV>
void dot_columns(float* C, int64_t ldc, const bf16* A, int64_t lda, const bf16* B, int64_t ldb, int64_t rows,
                 int64_t pairs, bool accumulate) {
  for (int64_t r = 0; r < rows; r++) {
    f16v c[CV];
    for (int v = 0; v < CV; v++) c[v] = accumulate ? simd::load(C + r * ldc + v * 16) : f16v{};
    for (int64_t p = 0; p < pairs; p++) {
      const float a0 = to_float(A[r * lda + 2 * p]), a1 = to_float(A[r * lda + 2 * p + 1]);
      for (int v = 0; v < CV; v++) {
        f16v b0, b1;
        for (int lane = 0; lane < 16; lane++) {
          b0[lane] = to_float(B[(p * ldb + v * 16 + lane) * 2]);
          b1[lane] = to_float(B[(p * ldb + v * 16 + lane) * 2 + 1]);
        }
        c[v] += a1 * b1;
        c[v] += a0 * b0;
      }
    }
    for (int v = 0; v < CV; v++) simd::store(C + r * ldc + v * 16, c[v]);
  }
}
#endif

// C[rows, N] (+)= A[rows, 2·pairs] · B (N a multiple of 16; ldc, ldb in floats / columns).
void dot(float* C, int64_t ldc, const bf16* A, int64_t lda, const bf16* B, int64_t ldb, int64_t N, int64_t rows,
         int64_t pairs, bool accumulate) {
  int64_t n0 = 0;
  for (; n0 + 64 <= N; n0 += 64) dot_columns<4>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, accumulate);
  switch ((N - n0) / 16) {
    case 3:
      dot_columns<3>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, accumulate);
      break;
    case 2:
      dot_columns<2>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, accumulate);
      break;
    case 1:
      dot_columns<1>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, accumulate);
      break;
    default:
      break;
  }
}

// ---- rounding to bf16 in the products' layouts ----------------------------------------------------------------

// 16 lanes each of x0 and x1 into out[0:32] interleaved (x0[0], x1[0], x0[1], …): one vector of a row pair.
inline void store_pair(bf16* out, f16v x0, f16v x1) {
#if defined(__AVX512BF16__)
  const __m512i both = (__m512i)_mm512_cvtne2ps_pbh((__m512)x1, (__m512)x0);  // x0 in the low half
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  _mm512_storeu_si512(out, _mm512_permutexvar_epi16(order, both));
#else
  for (int lane = 0; lane < 16; lane++) {
    out[2 * lane] = to_bf16(x0[lane]);
    out[2 * lane + 1] = to_bf16(x1[lane]);
  }
#endif
}

// 32 lanes x0, x1 into out[0:32] in order.
inline void store_row(bf16* out, f16v x0, f16v x1) {
#if defined(__AVX512BF16__)
  _mm512_storeu_si512(out, (__m512i)_mm512_cvtne2ps_pbh((__m512)x1, (__m512)x0));
#else
  for (int lane = 0; lane < 16; lane++) {
    out[lane] = to_bf16(x0[lane]);
    out[16 + lane] = to_bf16(x1[lane]);
  }
#endif
}

// x[0:n] rounded into out[0:n], n a multiple of 16.
void round_row(bf16* out, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) store_row(out + i, simd::load(x + i), simd::load(x + i + 16));
  if (i < n) {
    bf16 last[32];
    store_row(last, simd::load(x + i), f16v{});
    std::memcpy(out + i, last, 16 * sizeof(bf16));
  }
}

// Rows [t0, t0 + n) of head `head` of x [T, heads, D] (offset to its batch row), rounded, as a tile of 64 rows
// padded with zeros: transposed into pairs of columns, out[(d / 2) · 64 + r][d % 2] (the B operand of Sᵀ = K·Qᵀ),
// and/or in pairs of rows, out[(r / 2) · D + d][r % 2] (the B operand of dK = dSᵀ·Q).
void load_query_tile(bf16* by_columns, bf16* by_rows, const float* x, int64_t t0, int64_t n, int64_t heads,
                     int64_t head, int64_t D) {
  if (by_columns) std::memset(by_columns, 0, size_t(D * BQ) * sizeof(bf16));
  if (by_rows) std::memset(by_rows, 0, size_t(BQ * D) * sizeof(bf16));
  bf16 row[256];
  for (int64_t r = 0; r < n; r++) {
    const float* src = x + ((t0 + r) * heads + head) * D;
    if (by_columns) {
      round_row(row, src, D);
      for (int64_t dp = 0; dp < D / 2; dp++)
        std::memcpy(by_columns + (dp * BQ + r) * 2, row + 2 * dp, 2 * sizeof(bf16));
    }
    if (by_rows && r % 2 == 0) {
      const float* next = r + 1 < n ? src + heads * D : nullptr;
      for (int64_t d = 0; d < D; d += 16)
        store_pair(by_rows + ((r / 2) * D + d) * 2, simd::load(src + d), next ? simd::load(next + d) : f16v{});
    }
  }
}

// k or v [B, T, K, D] rounded into rows [B, K, T, D] and, if `columns`, also transposed [B, K, D, Tp] (Tp ≥ T + 1:
// a product over pairs of keys may read the key after the last, which is zero).
void round_keys(bf16* rows, bf16* columns, const float* x, const AttentionShape& s, int64_t Tp) {
  const int64_t T = s.T, K = s.K, D = s.D;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t g = 0; g < K; g++) {
      bf16* r = rows + (b * K + g) * T * D;
      for (int64_t t = 0; t < T; t++) round_row(r + t * D, x + ((b * T + t) * K + g) * D, D);
      if (!columns) continue;
      bf16* c = columns + (b * K + g) * D * Tp;
      for (int64_t d = 0; d < D; d++) std::memset(c + d * Tp + T, 0, size_t(Tp - T) * sizeof(bf16));
      for (int64_t t0 = 0; t0 < T; t0 += 64)
        for (int64_t d = 0; d < D; d++)
          for (int64_t t = t0; t < std::min(T, t0 + 64); t++) c[d * Tp + t] = r[t * D + d];
    }
}

// A buffer of at least n elements kept between calls by the calling thread (one per `Tag`): fresh large allocations
// cost page faults on every call, more than rounding the keys does. Contents are unspecified.
template <typename T, int Tag>
T* scratch(size_t n) {
  static thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// ---- masks ----------------------------------------------------------------------------------------------------

// The queries of a tile as lanes: their positions and first visible keys (as floats: exact below 2²⁴), 64 lanes;
// lanes past the last query repeat it.
struct QueryLanes {
  float position[BQ], first[BQ];
  QueryLanes(const RowMask& mask, int64_t i0, int64_t nq) {
    for (int64_t r = 0; r < BQ; r++) {
      const int64_t i = i0 + std::min(r, nq - 1);
      position[r] = float(i);
      first[r] = float(mask.first_key(i));
    }
  }
};

// Whether some query of the tile does not see some key of [j0, j0 + nk): the tile then needs its mask.
bool tile_is_masked(const RowMask& mask, int64_t i0, int64_t nq, int64_t j0, int64_t nk) {
  return j0 + nk - 1 > i0 || j0 < mask.first_key(i0 + nq - 1);
}

// Sets the entries of Sᵀ[nk, 64] whose key j0 + j a query does not see to −inf.
void mask_tile(float* S, const QueryLanes& lanes, int64_t j0, int64_t nk) {
  for (int64_t c = 0; c < NV; c++) {
    const f16v position = simd::load(lanes.position + c * 16), first = simd::load(lanes.first + c * 16);
    for (int64_t j = 0; j < nk; j++) {
      const f16v key = simd::splat(float(j0 + j));
      const f16v s = simd::load(S + j * BQ + c * 16);
      simd::store(S + j * BQ + c * 16, (key >= first && key <= position) ? s : simd::splat(kNegInf));
    }
  }
}

}  // namespace

const char* attention_bf16_products() {
#if defined(__AVX512BF16__)
  return "AVX512-BF16";
#else
  return "fp32 emulation";
#endif
}

void attention_forward_bf16(float* out, float* lse, const float* q, const float* k, const float* v,
                            const AttentionShape& s, const DocumentOffsets& docs) {
  const int64_t T = s.T, Tq = s.rows_q(), Q0 = s.q_offset(), H = s.H, K = s.K, D = s.D, group = H / K;
  const int64_t q_tiles = (Tq + BQ - 1) / BQ, Tp = T + 2;
  const float scale = 1.0f / std::sqrt(float(D));
  bf16* k_rows = scratch<bf16, 0>(size_t(s.B * K * T * D));
  bf16* v_rows = scratch<bf16, 2>(size_t(s.B * K * T * D));
  bf16* v_columns = scratch<bf16, 1>(size_t(s.B * K * D * Tp));
  round_keys(k_rows, nullptr, k, s, Tp);
  round_keys(v_rows, v_columns, v, s, Tp);

#pragma omp parallel
  {
    std::vector<bf16> QT(size_t(D * BQ)), PT(size_t(BK * BQ));
    std::vector<float> S(size_t(BK * BQ)), OT(size_t(D * BQ));
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < s.B; b++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t qt = 0; qt < q_tiles; qt++) {
          const int64_t g = h / group, i0 = Q0 + qt * BQ, nq = std::min(BQ, T - i0);
          const bf16* kg = k_rows + (b * K + g) * T * D;
          const bf16* vg = v_columns + (b * K + g) * D * Tp;
          const RowMask mask(T, s.window, docs, b);  // keys [first_key(i), i] for query i
          const QueryLanes lanes(mask, i0, nq);
          load_query_tile(QT.data(), nullptr, q + b * Tq * H * D, i0 - Q0, nq, H, h, D);
          std::fill(OT.begin(), OT.end(), 0.0f);
          f16v m[NV], l[NV];
          for (int64_t c = 0; c < NV; c++) m[c] = simd::splat(kNegInf), l[c] = f16v{};

          for (int64_t j0 = mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0), pairs = (nk + 1) / 2;
            dot(S.data(), BQ, kg + j0 * D, D, QT.data(), BQ, BQ, nk, D / 2, false);  // Sᵀ = K · Qᵀ
            if (tile_is_masked(mask, i0, nq, j0, nk)) mask_tile(S.data(), lanes, j0, nk);
            // Online softmax per query lane: rescale what was accumulated when the running max grows.
            for (int64_t c = 0; c < NV; c++) {
              f16v top = simd::splat(kNegInf);
              for (int64_t j = 0; j < nk; j++) top = simd::max(top, simd::load(S.data() + j * BQ + c * 16));
              const f16v m_new = simd::max(m[c], top * scale);
              const f16v shift = m_new == kNegInf ? f16v{} : m_new;  // no visible key yet: p = 0, not NaN
              const f16v alpha = simd::exp(m[c] - shift);            // 0 while m was −inf
              f16v sum = {};
              for (int64_t jp = 0; jp < pairs; jp++) {
                const f16v p0 = simd::exp(simd::load(S.data() + 2 * jp * BQ + c * 16) * scale - shift);
                const f16v p1 = 2 * jp + 1 < nk
                                    ? simd::exp(simd::load(S.data() + (2 * jp + 1) * BQ + c * 16) * scale - shift)
                                    : f16v{};
                sum += p0;
                sum += p1;
                store_pair(PT.data() + (jp * BQ + c * 16) * 2, p0, p1);
              }
              l[c] = l[c] * alpha + sum;
              m[c] = m_new;
              for (int64_t d = 0; d < D; d++)
                simd::store(OT.data() + d * BQ + c * 16, simd::load(OT.data() + d * BQ + c * 16) * alpha);
            }
            dot(OT.data(), BQ, vg + j0, Tp, PT.data(), BQ, BQ, D, pairs, true);  // Oᵀ += Vᵀ · Pᵀ
          }
          float m_lanes[BQ], l_lanes[BQ];
          for (int64_t c = 0; c < NV; c++) simd::store(m_lanes + c * 16, m[c]), simd::store(l_lanes + c * 16, l[c]);
          for (int64_t r = 0; r < nq; r++) {
            float* o = out + ((b * Tq + i0 - Q0 + r) * H + h) * D;
            const float inv = 1.0f / l_lanes[r];
            for (int64_t d = 0; d < D; d++) o[d] = OT[size_t(d * BQ + r)] * inv;
            lse[(b * H + h) * Tq + i0 - Q0 + r] = m_lanes[r] + std::log(l_lanes[r]);
          }
        }
  }
}

void attention_backward_bf16(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                             const float* q, const float* k, const float* v, const AttentionShape& s,
                             const DocumentOffsets& docs) {
  const int64_t B = s.B, T = s.T, Tq = s.rows_q(), Q0 = s.q_offset(), H = s.H, K = s.K, D = s.D, group = H / K;
  const int64_t Tp = T + 2;
  const float scale = 1.0f / std::sqrt(float(D));
  bf16* k_rows = scratch<bf16, 0>(size_t(B * K * T * D));
  bf16* k_columns = scratch<bf16, 1>(size_t(B * K * D * Tp));
  bf16* v_rows = scratch<bf16, 2>(size_t(B * K * T * D));
  round_keys(k_rows, k_columns, k, s, Tp);
  round_keys(v_rows, nullptr, v, s, Tp);
  // With GQA each query head writes its own dk/dv slice, summed over the group below.
  std::vector<float> dk_heads, dv_heads;
  if (group > 1) {
    dk_heads.assign(size_t(B * T * H * D), 0.0f);
    dv_heads.assign(size_t(B * T * H * D), 0.0f);
  }
  float* dk_h = group > 1 ? dk_heads.data() : dk;
  float* dv_h = group > 1 ? dv_heads.data() : dv;

#pragma omp parallel
  {
    std::vector<bf16> QT(size_t(D * BQ)), dOT(size_t(D * BQ)), Qr(size_t(BQ * D)), dOr(size_t(BQ * D)),
        P16(size_t(BK * BQ)), dS16(size_t(BK * BQ)), dSp(size_t(BK * BQ));
    std::vector<float> S(size_t(BK * BQ)), dP(size_t(BK * BQ)), dQT(size_t(D * BQ));
    // This head's dK and dV over all keys (each worker's own, kept between calls).
    float* dK = scratch<float, 3>(size_t(T * D));
    float* dV = scratch<float, 4>(size_t(T * D));
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < H; h++) {
        const int64_t g = h / group;
        const bf16* kg = k_rows + (b * K + g) * T * D;
        const bf16* ktg = k_columns + (b * K + g) * D * Tp;
        const bf16* vg = v_rows + (b * K + g) * T * D;
        const float* ob = out + b * Tq * H * D;
        const float* lse_bh = lse + (b * H + h) * Tq;
        const RowMask mask(T, s.window, docs, b);  // keys [first_key(i), i] for query i
        std::fill_n(dK, T * D, 0.0f);
        std::fill_n(dV, T * D, 0.0f);

        for (int64_t i0 = Q0; i0 < T; i0 += BQ) {
          const int64_t nq = std::min(BQ, T - i0);
          const QueryLanes lanes(mask, i0, nq);
          load_query_tile(QT.data(), Qr.data(), q + b * Tq * H * D, i0 - Q0, nq, H, h, D);
          load_query_tile(dOT.data(), dOr.data(), dout + b * Tq * H * D, i0 - Q0, nq, H, h, D);
          // Per query lane: lse (+inf past the last query, so that p = 0 there) and delta = Σ_d dO·O (= Σ_j P·dP).
          float lse_lanes[BQ], delta_lanes[BQ];
          for (int64_t r = 0; r < BQ; r++) {
            lse_lanes[r] = r < nq ? lse_bh[i0 - Q0 + r] : std::numeric_limits<float>::infinity();
            float sum = 0.0f;
            if (r < nq) {
              const float* o = ob + ((i0 - Q0 + r) * H + h) * D;
              const float* g_o = dout + ((b * Tq + i0 - Q0 + r) * H + h) * D;
              for (int64_t d = 0; d < D; d++) sum += g_o[d] * o[d];
            }
            delta_lanes[r] = sum;
          }
          std::fill(dQT.begin(), dQT.end(), 0.0f);

          for (int64_t j0 = mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0), pairs = (nk + 1) / 2;
            dot(S.data(), BQ, kg + j0 * D, D, QT.data(), BQ, BQ, nk, D / 2, false);    // Sᵀ = K · Qᵀ
            dot(dP.data(), BQ, vg + j0 * D, D, dOT.data(), BQ, BQ, nk, D / 2, false);  // dPᵀ = V · dOᵀ
            if (tile_is_masked(mask, i0, nq, j0, nk)) mask_tile(S.data(), lanes, j0, nk);
            // P = exp(S − lse), dS = P ∘ (dP − delta), rounded: as rows of Pᵀ and dSᵀ, and dSᵀ in pairs of keys.
            for (int64_t c = 0; c < NV; c++) {
              const f16v lse_c = simd::load(lse_lanes + c * 16), delta_c = simd::load(delta_lanes + c * 16);
              f16v p[2], ds[2];
              for (int64_t j = 0; j < 2 * pairs; j++) {
                const int64_t at = j * BQ + c * 16;
                p[j & 1] = j < nk ? simd::exp(simd::load(S.data() + at) * scale - lse_c) : f16v{};
                ds[j & 1] = j < nk ? p[j & 1] * (simd::load(dP.data() + at) - delta_c) : f16v{};
                if (j & 1) store_pair(dSp.data() + ((j / 2) * BQ + c * 16) * 2, ds[0], ds[1]);
                if (j < nk) simd::store(S.data() + at, p[j & 1]), simd::store(dP.data() + at, ds[j & 1]);
              }
            }
            for (int64_t j = 0; j < nk; j++)
              for (int64_t c = 0; c < NV; c += 2) {
                const int64_t at = j * BQ + c * 16;
                store_row(P16.data() + at, simd::load(S.data() + at), simd::load(S.data() + at + 16));
                store_row(dS16.data() + at, simd::load(dP.data() + at), simd::load(dP.data() + at + 16));
              }
            dot(dV + j0 * D, D, P16.data(), BQ, dOr.data(), D, D, nk, BQ / 2, true);  // dV += Pᵀ · dO
            dot(dK + j0 * D, D, dS16.data(), BQ, Qr.data(), D, D, nk, BQ / 2, true);  // dK += dSᵀ · Q
            dot(dQT.data(), BQ, ktg + j0, Tp, dSp.data(), BQ, BQ, D, pairs, true);    // dQᵀ += Kᵀ · dSᵀ
          }
          for (int64_t r = 0; r < nq; r++) {
            float* dst = dq + ((b * Tq + i0 - Q0 + r) * H + h) * D;
            for (int64_t d = 0; d < D; d++) dst[d] = dQT[size_t(d * BQ + r)] * scale;
          }
        }
        // Write this head's dK/dV: straight into dk/dv for MHA, into its own slice for GQA.
        const int64_t heads_out = group > 1 ? H : K, slot = group > 1 ? h : g;
        for (int64_t t = 0; t < T; t++)
          for (int64_t d = 0; d < D; d++) {
            dk_h[((b * T + t) * heads_out + slot) * D + d] = dK[t * D + d] * scale;
            dv_h[((b * T + t) * heads_out + slot) * D + d] = dV[t * D + d];
          }
      }
  }

  if (group > 1) attention_tiles::sum_query_head_groups(dk, dv, dk_heads.data(), dv_heads.data(), B * T, H, K, D);
}

}  // namespace replica::cpu
