// Attention with bf16 products on the CPU (attention.h, "bf16 products"): the fp32 kernel's tiles and online
// softmax, with every product a bf16 dot product accumulated in fp32 (AVX512-BF16's vdpbf16ps, one instruction per
// 32 multiply-adds; elsewhere the same products as fp32 FMAs, with AVX2 or portable code of the same bits).
//
// Tiles are held transposed, keys by queries (Sᵀ = K·Qᵀ), so that the 16 lanes of a vector are 16 queries: the
// softmax's running max and sum, the lse and delta of a query are lanes, not horizontal reductions, and every
// product is one shape, C[M, N] (+)= A[M, 2P] · B[2P, N] with A's rows in bf16 and B in pairs of rows (B's rows 2p
// and 2p + 1 interleaved, the operand layout of vdpbf16ps). Before the tiles, k and v are rounded once into the
// layouts the products read (key rows, and transposed), shared by all query heads of a KV head. Within a tile each
// vector of 16 queries reads only the keys its queries see (TileSpans): the tiles on the diagonal and on a window's
// or a document's first keys cost about what they hold, so masked rows run as fast per visible pair as causal ones.
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

#if defined(__AVX512BF16__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace replica::cpu {

namespace {

using attention_tiles::BK;
using attention_tiles::BQ;
using attention_mask::RowMask;
using simd::f16v;
using simd::f8v;
using simd::i16v;
using simd::transpose8;
constexpr int64_t NV = BQ / simd::kWidth;  // vectors per row of a [keys, queries] tile
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ---- the product: C[m, 0:16·CV] (+)= Σ_p A[m, 2p] · B[p, n, 0] + A[m, 2p + 1] · B[p, n, 1] ------------------
// A: bf16 rows of stride lda. B: pairs of rows, B + p · 2 · ldb the pair p (ldb columns). Four rows of C at a time
// share each load of B.

// What C starts from: zero, or what it holds, with each column n first multiplied by scale[n] where scale is given
// (the online softmax's rescaling of Oᵀ, on the way into the registers instead of a pass of its own over Oᵀ: the same
// fp32 products, so the same bits).
struct StartOfC {
  bool accumulate;
  const float* scale = nullptr;
  // The start of C's columns from n0 on.
  StartOfC from_column(int64_t n0) const { return {accumulate, scale ? scale + n0 : nullptr}; }
};
constexpr StartOfC kFromZero{false}, kFromC{true};

#if defined(__AVX512BF16__)
inline __m512bh broadcast_pair(const bf16* a) {
  int32_t bits;
  std::memcpy(&bits, a, sizeof(bits));
  return (__m512bh)_mm512_set1_epi32(bits);
}

// The 16 values of C at column n0 as a register starts them: zero, or C's, scaled where asked. (The column offset, not
// from_column: a StartOfC per accumulator measured ~5 % slower over the forward.)
inline __m512 start_value(const float* C, const StartOfC& start, int64_t n0) {
  if (!start.accumulate) return _mm512_setzero_ps();
  const __m512 c = _mm512_loadu_ps(C);
  return start.scale ? _mm512_mul_ps(c, _mm512_loadu_ps(start.scale + n0)) : c;
}

template <int CV>
void dot_columns(float* C, int64_t ldc, const bf16* A, int64_t lda, const bf16* B, int64_t ldb, int64_t rows,
                 int64_t pairs, StartOfC start) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    __m512 c[4][CV];
    for (int i = 0; i < 4; i++)
      for (int v = 0; v < CV; v++) c[i][v] = start_value(C + (r + i) * ldc + v * 16, start, v * 16);
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
    for (int v = 0; v < CV; v++) c[v] = start_value(C + r * ldc + v * 16, start, v * 16);
    for (int64_t p = 0; p < pairs; p++) {
      const __m512bh a = broadcast_pair(A + r * lda + 2 * p);
      for (int v = 0; v < CV; v++)
        c[v] = _mm512_dpbf16_ps(c[v], a, (__m512bh)_mm512_loadu_si512(B + (p * ldb + v * 16) * 2));
    }
    for (int v = 0; v < CV; v++) _mm512_storeu_ps(C + r * ldc + v * 16, c[v]);
  }
}
#elif defined(__AVX2__) && defined(__FMA__)
// AVX2 without AVX512-BF16: the same products as fp32 FMAs, odd element of the pair first as vdpbf16ps sums them (the
// product of two bf16 values is exact in fp32): the bits of the portable emulation below. A pair of bf16 read as
// one 32-bit word holds both operands: the even one is the word shifted left by 16, the odd one its high half.
inline __m256 even_halves(__m256i w) { return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); }
inline __m256 odd_halves(__m256i w) { return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(-65536))); }

// R rows of C and 16 columns (two registers): R · 2 accumulators, each pair of B expanded once for the R rows.
template <int R>
inline void dot_block(float* C, int64_t ldc, const bf16* A, int64_t lda, const bf16* B, int64_t ldb, int64_t pairs,
                      StartOfC start) {
  __m256 c[R][2];
  for (int i = 0; i < R; i++)
    for (int h = 0; h < 2; h++) {
      c[i][h] = start.accumulate ? _mm256_loadu_ps(C + i * ldc + h * 8) : _mm256_setzero_ps();
      if (start.accumulate && start.scale) c[i][h] = _mm256_mul_ps(c[i][h], _mm256_loadu_ps(start.scale + h * 8));
    }
  for (int64_t p = 0; p < pairs; p++) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + p * 2 * ldb));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + p * 2 * ldb + 16));
    const __m256 b_odd[2] = {odd_halves(w0), odd_halves(w1)}, b_even[2] = {even_halves(w0), even_halves(w1)};
    for (int i = 0; i < R; i++) {
      int32_t bits;
      std::memcpy(&bits, A + i * lda + 2 * p, sizeof(bits));
      const __m256i a = _mm256_set1_epi32(bits);
      const __m256 a_odd = odd_halves(a), a_even = even_halves(a);
      for (int h = 0; h < 2; h++) {
        c[i][h] = _mm256_fmadd_ps(a_odd, b_odd[h], c[i][h]);
        c[i][h] = _mm256_fmadd_ps(a_even, b_even[h], c[i][h]);
      }
    }
  }
  for (int i = 0; i < R; i++)
    for (int h = 0; h < 2; h++) _mm256_storeu_ps(C + i * ldc + h * 8, c[i][h]);
}

template <int CV>
void dot_columns(float* C, int64_t ldc, const bf16* A, int64_t lda, const bf16* B, int64_t ldb, int64_t rows,
                 int64_t pairs, StartOfC start) {
  for (int v = 0; v < CV; v++) {
    const StartOfC columns = start.from_column(v * 16);
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4)
      dot_block<4>(C + r * ldc + v * 16, ldc, A + r * lda, lda, B + v * 32, ldb, pairs, columns);
    for (; r < rows; r++) dot_block<1>(C + r * ldc + v * 16, ldc, A + r * lda, lda, B + v * 32, ldb, pairs, columns);
  }
}
#else
// Without AVX512-BF16: the same products in fp32 (the products of two bf16 values are exact in fp32).
template <int CV>
void dot_columns(float* C, int64_t ldc, const bf16* A, int64_t lda, const bf16* B, int64_t ldb, int64_t rows,
                 int64_t pairs, StartOfC start) {
  for (int64_t r = 0; r < rows; r++) {
    f16v c[CV];
    for (int v = 0; v < CV; v++) {
      c[v] = start.accumulate ? simd::load(C + r * ldc + v * 16) : f16v{};
      if (start.accumulate && start.scale) c[v] = c[v] * simd::load(start.scale + v * 16);
    }
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
         int64_t pairs, StartOfC start) {
  int64_t n0 = 0;
  for (; n0 + 64 <= N; n0 += 64)
    dot_columns<4>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, start.from_column(n0));
  switch ((N - n0) / 16) {
    case 3:
      dot_columns<3>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, start.from_column(n0));
      break;
    case 2:
      dot_columns<2>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, start.from_column(n0));
      break;
    case 1:
      dot_columns<1>(C + n0, ldc, A, lda, B + 2 * n0, ldb, rows, pairs, start.from_column(n0));
      break;
    default:
      break;
  }
}

// ---- transposing 8 × 8 blocks of 32-bit words (simd::transpose8) -----------------------------------------------

// The rows of a tile held transposed, Xᵀ[D, 64] (a query per lane), into rows r < n of x (stride ldx): x[r][d] =
// Xᵀ[d][r].
void store_rows(float* x, int64_t ldx, const float* XT, int64_t n, int64_t D) {
  int64_t r = 0;
  for (; r + 8 <= n; r += 8)
    for (int64_t d = 0; d < D; d += 8) transpose8(x + r * ldx + d, ldx, XT + d * BQ + r, BQ);
  for (; r < n; r++)
    for (int64_t d = 0; d < D; d++) x[r * ldx + d] = XT[d * BQ + r];
}

// dots[r] = Σ_d a[r][d] · b[r][d] for rows r < n (stride ld), in order of d, 8 rows at a time as lanes; 0 for
// r in [n, 64).
void row_dots(float* dots, const float* a, const float* b, int64_t ld, int64_t n, int64_t D) {
  int64_t r = 0;
  for (; r + 8 <= n; r += 8) {
    f8v sum = {};
    for (int64_t d = 0; d < D; d += 8) {
      f8v at[8], bt[8];
      transpose8(at, 8, a + r * ld + d, ld);
      transpose8(bt, 8, b + r * ld + d, ld);
      for (int k = 0; k < 8; k++) sum += bt[k] * at[k];
    }
    std::memcpy(dots + r, &sum, sizeof(sum));
  }
  for (; r < BQ; r++) {
    float sum = 0.0f;
    if (r < n)
      for (int64_t d = 0; d < D; d++) sum += b[r * ld + d] * a[r * ld + d];
    dots[r] = sum;
  }
}

// ---- rounding to bf16 in the products' layouts ----------------------------------------------------------------

#if !defined(__AVX512BF16__) && defined(__AVX2__)
// to_bf16 (core/bf16.h) of 8 lanes, in the low 16 bits of each 32-bit lane: round to nearest even, NaN stays quiet.
inline __m256i rounded_bf16(__m256 x) {
  const __m256i u = _mm256_castps_si256(x), high = _mm256_srli_epi32(u, 16);
  const __m256i even = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), even), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(0x40)), nan);
}
#endif

#if !defined(__AVX512BF16__) && defined(__AVX2__)
// 8 lanes each of x0 and x1 into out[0:16] interleaved (x0[0], x1[0], x0[1], …): one AVX2 register of each.
inline void store_pair(bf16* out, f8v x0, f8v x1) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_or_si256(rounded_bf16(__m256(x0)), _mm256_slli_epi32(rounded_bf16(__m256(x1)), 16)));
}
#endif

// 16 lanes each of x0 and x1 into out[0:32] interleaved (x0[0], x1[0], x0[1], …): one vector of a row pair.
inline void store_pair(bf16* out, f16v x0, f16v x1) {
#if defined(__AVX512BF16__)
  const __m512i both = (__m512i)_mm512_cvtne2ps_pbh((__m512)x1, (__m512)x0);  // x0 in the low half
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  _mm512_storeu_si512(out, _mm512_permutexvar_epi16(order, both));
#elif defined(__AVX2__)
  f8v h0[2], h1[2];
  std::memcpy(h0, &x0, sizeof(h0));
  std::memcpy(h1, &x1, sizeof(h1));
  for (int h = 0; h < 2; h++) store_pair(out + 16 * h, h0[h], h1[h]);
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
#elif defined(__AVX2__)
  __m256 h[4];
  std::memcpy(h, &x0, 2 * sizeof(__m256));
  std::memcpy(h + 2, &x1, 2 * sizeof(__m256));
  for (int i = 0; i < 2; i++) {  // packus interleaves the 128-bit halves of its operands; the permute restores order
    const __m256i packed = _mm256_packus_epi32(rounded_bf16(h[2 * i]), rounded_bf16(h[2 * i + 1]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16 * i), _mm256_permute4x64_epi64(packed, 0xd8));
  }
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
  if (by_rows) std::memset(by_rows, 0, size_t(BQ * D) * sizeof(bf16));
  if (by_columns) {  // the rows rounded, then their pairs of columns (32-bit words) transposed 8 × 8
    bf16 rows[BQ * 256];
    for (int64_t r = 0; r < BQ; r++) {
      if (r < n) round_row(rows + r * D, x + ((t0 + r) * heads + head) * D, D);
      else std::memset(rows + r * D, 0, size_t(D) * sizeof(bf16));
    }
    for (int64_t r = 0; r < BQ; r += 8)
      for (int64_t dp = 0; dp < D / 2; dp += 8)
        transpose8(by_columns + (dp * BQ + r) * 2, BQ, rows + r * D + 2 * dp, D / 2);
  }
  if (by_rows)
    for (int64_t r = 0; r < n; r += 2) {
      const float* src = x + ((t0 + r) * heads + head) * D;
      const float* next = r + 1 < n ? src + heads * D : nullptr;
      for (int64_t d = 0; d < D; d += 16)
        store_pair(by_rows + ((r / 2) * D + d) * 2, simd::load(src + d), next ? simd::load(next + d) : f16v{});
    }
}

// Asks for rows [t0, t0 + n) of head `head` of x [T, heads, D] to be brought into the cache: the rows of a head are
// a stride of heads · D apart, a cache miss each, so the next query tile's are fetched while this one computes.
void prefetch_rows(const float* x, int64_t t0, int64_t n, int64_t heads, int64_t head, int64_t D) {
  for (int64_t r = 0; r < n; r++)
    for (int64_t d = 0; d < D; d += 16) __builtin_prefetch(x + ((t0 + r) * heads + head) * D + d);
}

// The row stride, in elements, of a head's keys or values transposed, [D, Tp]: past the last key (a product over pairs
// of keys may read the key after it, a zero), even (the rows are read as 32-bit words), and an odd number of cache
// lines, so that consecutive rows fall in different sets of the L1 cache. With Tp = T + 2 at T = 2048 (4,100 bytes),
// 16 consecutive rows shared one 8-way set: round_head wrote a head's values transposed in ~70 µs instead of ~48.
int64_t transposed_stride(int64_t T) { return (T + 1 + 63) / 64 * 64 + 32; }

// One head of k or v, its position t at x + t · stride (x [B, T, K, D]: stride K · D), rounded into rows [T, D] (if
// `rows`) and/or transposed [D, Tp] (if `columns`; Tp ≥ T + 1: a product over pairs of keys may read the key after
// the last, which is zero). Called by the worker that runs the head's tiles, just before them: the rounded head
// (2 × 256 KiB at T = 2048, D = 64) is then read from that core's cache by its tiles instead of from memory, and
// no pass over all heads with a barrier after it precedes the tiles.
void round_head(bf16* rows, bf16* columns, const float* x, int64_t stride, int64_t T, int64_t D, int64_t Tp) {
  for (int64_t t = 0; t < T && rows; t++) round_row(rows + t * D, x + t * stride, D);
  if (!columns) return;
  // 64 positions at a time: pairs of positions as 32-bit words, pairs[t / 2][d] = (x[t][d], x[t + 1][d]) rounded
  // (zeros past T), then transposed 8 × 8 into the rows of columns: two positions of a column per word (Tp and t0
  // are even).
  const int64_t Tw = Tp / 2;
  alignas(64) bf16 pairs[32 * 2 * 256];
  for (int64_t t0 = 0; t0 < T; t0 += 64) {
    const int64_t words = (std::min(T, t0 + 64) - t0 + 1) / 2;
    for (int64_t w = 0; w < words; w++) {
      const float* x0 = x + (t0 + 2 * w) * stride;
      const bool odd = t0 + 2 * w + 1 < T;
      for (int64_t d = 0; d < D; d += 16)
        store_pair(pairs + (w * D + d) * 2, simd::load(x0 + d), odd ? simd::load(x0 + stride + d) : f16v{});
    }
    int64_t w = 0;
    for (; w + 8 <= words; w += 8)
      for (int64_t d = 0; d < D; d += 8)
        transpose8(columns + (d * Tw + t0 / 2 + w) * 2, Tw, pairs + (w * D + d) * 2, D);
    for (; w < words; w++)
      for (int64_t d = 0; d < D; d++) std::memcpy(columns + (d * Tw + t0 / 2 + w) * 2, pairs + (w * D + d) * 2, 4);
    if (t0 + 64 >= T)
      for (int64_t d = 0; d < D; d++)
        std::memset(columns + d * Tp + 2 * (t0 / 2 + words), 0, size_t(Tp - 2 * (t0 / 2 + words)) * sizeof(bf16));
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
//
// A tile's 64 query lanes are four vectors of 16. The keys a vector's queries see form one run of the tile (the
// union of the runs [first_key(i), i] of consecutive queries, each starting no later than the next query): what a
// vector reads of a tile is that run, rounded out to multiples of 4 keys. Everything outside it is masked for all
// 16 of its queries: its scores would be −inf and its probabilities exact zeros, so it is neither computed nor
// read, and a vector whose queries see no key of the tile skips the tile (its running max, sum and output would be
// rescaled by exactly 1). What is skipped was an exact zero in the dense tile, and adding a zero product leaves an
// fp32 sum as it is, so the outputs keep the dense tile's bits (but for the sign of a sum that is zero, which adding
// +0 turns positive, and a subnormal sum that vdpbf16ps flushes to zero). The mask itself is applied only to the
// vectors whose run holds an entry some of its queries do not see (the diagonal, a window's or a document's edge).

// The queries of a tile as lanes: their positions and first visible keys (as floats: exact below 2²⁴), 64 lanes;
// lanes past the last query repeat it. And per vector of 16 lanes: its first and last query, the first key of each.
struct QueryLanes {
  float position[BQ], first[BQ];
  int64_t vectors;  // the vectors that hold a query of the tile: ⌈nq / 16⌉ (the rest is padding, skipped)
  int64_t first_query[NV], last_query[NV], first_key_of_first[NV], first_key_of_last[NV];
  QueryLanes(const RowMask& mask, int64_t i0, int64_t nq) : vectors((nq + simd::kWidth - 1) / simd::kWidth) {
    int64_t first_key[BQ];
    for (int64_t r = 0; r < BQ; r++) {
      const int64_t i = i0 + std::min(r, nq - 1);
      first_key[r] = r < nq ? mask.first_key(i) : first_key[nq - 1];
      position[r] = float(i);
      first[r] = float(first_key[r]);
    }
    for (int64_t c = 0; c < NV; c++) {
      const int64_t r0 = c * simd::kWidth, r1 = std::min(r0 + simd::kWidth, nq) - 1;
      first_query[c] = i0 + std::min(r0, nq - 1);
      last_query[c] = i0 + std::max(r1, int64_t(0));
      first_key_of_first[c] = first_key[std::min(r0, nq - 1)];
      first_key_of_last[c] = first_key[std::max(r1, int64_t(0))];
    }
  }
};

// What the vectors of query lanes read of the tile of keys [j0, j0 + nk): vector c the keys [lo[c], hi[c]) of the
// tile (multiples of 4, hi ≤ nk), for the vectors c in [begin, end) (those whose queries see a key of the tile: a
// contiguous range); masked[c] where some query of c does not see some key of its run.
struct TileSpans {
  int64_t lo[NV] = {}, hi[NV] = {}, begin = NV, end = 0;
  bool masked[NV] = {};
  TileSpans(const QueryLanes& lanes, int64_t j0, int64_t nk) {
    for (int64_t c = 0; c < lanes.vectors; c++) {
      const int64_t first = std::max(lanes.first_key_of_first[c], j0) - j0;
      const int64_t last = std::min(lanes.last_query[c], j0 + nk - 1) - j0;
      if (last < first) continue;
      lo[c] = first & ~int64_t(3);
      hi[c] = std::min(nk, (last + 4) & ~int64_t(3));
      masked[c] = lanes.first_key_of_last[c] > j0 + lo[c] || lanes.first_query[c] < j0 + hi[c] - 1;
      begin = std::min(begin, c);
      end = c + 1;
    }
  }
  // Calls run(r0, r1, c0, c1) for the runs of keys [r0, r1) of the tile that the same vectors [c0, c1) read, in
  // order. lo and hi do not decrease from one vector to the next, so the vectors reading a key are contiguous.
  template <typename Run>
  void for_each_run(Run&& run) const {
    int64_t bounds[2 * NV], n = 0;
    for (int64_t a = begin, b = begin; a < end || b < end;) {  // merge the sorted lo and hi, without repeats
      const int64_t next = b == end || (a < end && lo[a] <= hi[b]) ? lo[a++] : hi[b++];
      if (n == 0 || bounds[n - 1] != next) bounds[n++] = next;
    }
    for (int64_t b = 0; b + 1 < n; b++) {
      const int64_t r0 = bounds[b];
      int64_t c0 = begin, c1 = end;
      while (c0 < end && hi[c0] <= r0) c0++;
      while (c1 > c0 && lo[c1 - 1] > r0) c1--;
      if (c0 < c1) run(r0, bounds[b + 1], c0, c1);
    }
  }
};

// Sets the entries of keys [lo, hi) of vector c of Sᵀ[nk, 64] (keys j0 + j) that its queries do not see to −inf.
// Without AVX-512 in halves of 8 lanes: GCC lowers a conditional on 16 lanes lane by lane there.
#if defined(__AVX512F__)
using MaskVector = f16v;
#else
using MaskVector = f8v;
#endif
void mask_vector(float* S, const QueryLanes& lanes, int64_t c, int64_t j0, int64_t lo, int64_t hi) {
  constexpr int64_t width = sizeof(MaskVector) / sizeof(float);
  for (int64_t part = c * 16; part < c * 16 + 16; part += width) {
    MaskVector position, first;
    std::memcpy(&position, lanes.position + part, sizeof(MaskVector));
    std::memcpy(&first, lanes.first + part, sizeof(MaskVector));
    for (int64_t j = lo; j < hi; j++) {
      const MaskVector key = MaskVector{} + float(j0 + j);
      MaskVector s;
      std::memcpy(&s, S + j * BQ + part, sizeof(MaskVector));
      s = (key >= first && key <= position) ? s : MaskVector{} + kNegInf;
      std::memcpy(S + j * BQ + part, &s, sizeof(MaskVector));
    }
  }
}

// The largest of rows [lo, hi) of vector c of Sᵀ[nk, 64] per lane, −inf for none: four running maxima, then theirs,
// not one chain of hi − lo dependent instructions. The largest of a set: only the sign of a zero maximum and which
// NaN wins can depend on the order, and neither reaches an output (a shift of ±0 leaves every exp argument's value,
// m ± 0 + log l is the same sum, and a lane with a NaN score gets NaN outputs in any order).
f16v column_max(const float* S, int64_t c, int64_t lo, int64_t hi) {
  f16v result;
  for (int part = 0; part < simd::kParts; part++) {  // native vectors (simd.h), each lane as before
    const float* column = S + c * 16 + part * simd::kNativeWidth;
    simd::native top[4];
    for (simd::native& t : top) t = simd::splat<simd::native>(kNegInf);
    int64_t j = lo;
    for (; j + 4 <= hi; j += 4)
      for (int u = 0; u < 4; u++) top[u] = simd::max(top[u], simd::load<simd::native>(column + (j + u) * BQ));
    for (; j < hi; j++) top[0] = simd::max(top[0], simd::load<simd::native>(column + j * BQ));
    const simd::native m = simd::max(simd::max(top[0], top[1]), simd::max(top[2], top[3]));
    std::memcpy(reinterpret_cast<float*>(&result) + part * simd::kNativeWidth, &m, sizeof(m));
  }
  return result;
}

}  // namespace

const char* attention_bf16_products() {
#if defined(__AVX512BF16__)
  return "AVX512-BF16";
#elif defined(__AVX2__) && defined(__FMA__)
  return "fp32 emulation, AVX2";
#else
  return "fp32 emulation";
#endif
}

void attention_forward_bf16(float* out, float* lse, const float* q, const float* k, const float* v,
                            const AttentionShape& s, const DocumentOffsets& docs) {
  const int64_t T = s.T, Tq = s.rows_q(), Q0 = s.q_offset(), H = s.H, K = s.K, D = s.D, group = H / K;
  const int64_t q_tiles = (Tq + BQ - 1) / BQ, Tp = transposed_stride(T);
  const float scale = 1.0f / std::sqrt(float(D));

#pragma omp parallel
  {
    std::vector<bf16> QT(size_t(D * BQ)), PT(size_t(BK * BQ));
    std::vector<float> S(size_t(BK * BQ)), OT(size_t(D * BQ));
    // The KV head this worker's tiles read, rounded (round_head): its keys as rows, its values as columns.
    bf16* kg = scratch<bf16, 0>(size_t(T * D));
    bf16* vg = scratch<bf16, 1>(size_t(D * Tp));
    int64_t rounded = -1;  // which b · K + g they hold
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < s.B; b++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t qt = 0; qt < q_tiles; qt++) {
          const int64_t g = h / group, i0 = Q0 + qt * BQ, nq = std::min(BQ, T - i0);
          if (b * K + g != rounded) {
            round_head(kg, nullptr, k + (b * T * K + g) * D, K * D, T, D, Tp);
            round_head(nullptr, vg, v + (b * T * K + g) * D, K * D, T, D, Tp);
            rounded = b * K + g;
          }
          const RowMask mask(T, s.window, docs, b);  // keys [first_key(i), i] for query i
          const QueryLanes lanes(mask, i0, nq);
          load_query_tile(QT.data(), nullptr, q + b * Tq * H * D, i0 - Q0, nq, H, h, D);
          if (i0 + BQ < T) prefetch_rows(q + b * Tq * H * D, i0 + BQ - Q0, std::min(BQ, T - i0 - BQ), H, h, D);
          std::fill(OT.begin(), OT.end(), 0.0f);
          f16v m[NV], l[NV];
          for (int64_t c = 0; c < NV; c++) m[c] = simd::splat(kNegInf), l[c] = f16v{};

          for (int64_t j0 = mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            const TileSpans spans(lanes, j0, nk);
            spans.for_each_run([&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {  // Sᵀ = K · Qᵀ
              dot(S.data() + r0 * BQ + c0 * 16, BQ, kg + (j0 + r0) * D, D, QT.data() + c0 * 32, BQ, (c1 - c0) * 16,
                  r1 - r0, D / 2, kFromZero);
            });
            // Online softmax per query lane: what was accumulated is rescaled when the running max grows, by the first
            // product below that adds to the lane's column of Oᵀ (rescale: alpha until then, 1 after).
            alignas(64) float rescale[BQ];
            for (int64_t c = spans.begin; c < spans.end; c++) {
              const int64_t lo = spans.lo[c], hi = spans.hi[c];
              if (spans.masked[c]) mask_vector(S.data(), lanes, c, j0, lo, hi);
              const f16v m_new = simd::max(m[c], column_max(S.data(), c, lo, hi) * scale);
              const f16v shift = m_new == kNegInf ? f16v{} : m_new;  // no visible key yet: p = 0, not NaN
              const f16v alpha = simd::exp(m[c] - shift);            // 0 while m was −inf
              // The exponentials and their sum on native vectors (simd.h), each lane as before.
              simd::native shift_part[simd::kParts], sum_part[simd::kParts] = {};
              std::memcpy(shift_part, &shift, sizeof(shift));
              for (int64_t jp = lo / 2; jp < (hi + 1) / 2; jp++)
                for (int part = 0; part < simd::kParts; part++) {
                  const int64_t at = c * 16 + part * simd::kNativeWidth;
                  const simd::native p0 =
                      simd::exp(simd::load<simd::native>(S.data() + 2 * jp * BQ + at) * scale - shift_part[part]);
                  const simd::native p1 =
                      2 * jp + 1 < hi ? simd::exp(simd::load<simd::native>(S.data() + (2 * jp + 1) * BQ + at) * scale -
                                                  shift_part[part])
                                      : simd::native{};
                  sum_part[part] += p0;
                  sum_part[part] += p1;
                  store_pair(PT.data() + (jp * BQ + at) * 2, p0, p1);
                }
              f16v sum;
              std::memcpy(&sum, sum_part, sizeof(sum));
              l[c] = l[c] * alpha + sum;
              m[c] = m_new;
              simd::store(rescale + c * 16, alpha);
            }
            spans.for_each_run([&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {  // Oᵀ = Oᵀ · alpha + Vᵀ · Pᵀ
              const int64_t p0 = r0 / 2, p1 = (r1 + 1) / 2;
              dot(OT.data() + c0 * 16, BQ, vg + j0 + r0, Tp, PT.data() + (p0 * BQ + c0 * 16) * 2, BQ, (c1 - c0) * 16, D,
                  p1 - p0, StartOfC{true, rescale + c0 * 16});
              for (int64_t c = c0; c < c1; c++) simd::store(rescale + c * 16, simd::splat(1.0f));
            });
          }
          float m_lanes[BQ], l_lanes[BQ];
          for (int64_t c = 0; c < NV; c++) simd::store(m_lanes + c * 16, m[c]), simd::store(l_lanes + c * 16, l[c]);
          for (int64_t c = 0; c < lanes.vectors; c++) {  // Oᵀ / l, then transposed into the rows of out
            const f16v inv = simd::splat(1.0f) / l[c];
            for (int64_t d = 0; d < D; d++)
              simd::store(OT.data() + d * BQ + c * 16, simd::load(OT.data() + d * BQ + c * 16) * inv);
          }
          store_rows(out + ((b * Tq + i0 - Q0) * H + h) * D, H * D, OT.data(), nq, D);
          for (int64_t r = 0; r < nq; r++) lse[(b * H + h) * Tq + i0 - Q0 + r] = m_lanes[r] + std::log(l_lanes[r]);
        }
  }
}

void attention_backward_bf16(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                             const float* q, const float* k, const float* v, const AttentionShape& s,
                             const DocumentOffsets& docs) {
  const int64_t B = s.B, T = s.T, Tq = s.rows_q(), Q0 = s.q_offset(), H = s.H, K = s.K, D = s.D, group = H / K;
  const int64_t Tp = transposed_stride(T);
  const float scale = 1.0f / std::sqrt(float(D));
  attention_tiles::KeyGradients key_gradients(dk, dv, s);

#pragma omp parallel
  {
    std::vector<bf16> QT(size_t(D * BQ)), dOT(size_t(D * BQ)), Qr(size_t(BQ * D)), dOr(size_t(BQ * D)),
        P16(size_t(BK * BQ)), dS16(size_t(BK * BQ)), dSp(size_t(BK * BQ));
    std::vector<float> S(size_t(BK * BQ)), dP(size_t(BK * BQ)), dQT(size_t(D * BQ));
    // This head's dK and dV over all keys (each worker's own, kept between calls).
    float* dK = scratch<float, 3>(size_t(T * D));
    float* dV = scratch<float, 4>(size_t(T * D));
    // The KV head this worker's heads read, rounded (round_head): keys as rows and as columns, values as rows.
    bf16* kg = scratch<bf16, 0>(size_t(T * D));
    bf16* ktg = scratch<bf16, 1>(size_t(D * Tp));
    bf16* vg = scratch<bf16, 2>(size_t(T * D));
    int64_t rounded = -1;  // which b · K + g they hold
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < H; h++) {
        const int64_t g = h / group;
        if (b * K + g != rounded) {
          round_head(kg, ktg, k + (b * T * K + g) * D, K * D, T, D, Tp);
          round_head(vg, nullptr, v + (b * T * K + g) * D, K * D, T, D, Tp);
          rounded = b * K + g;
        }
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
          if (i0 + BQ < T)
            for (const float* x : {q + b * Tq * H * D, dout + b * Tq * H * D, ob})
              prefetch_rows(x, i0 + BQ - Q0, std::min(BQ, T - i0 - BQ), H, h, D);
          // Per query lane: lse (+inf past the last query, so that p = 0 there) and delta = Σ_d dO·O (= Σ_j P·dP).
          float lse_lanes[BQ], delta_lanes[BQ];
          for (int64_t r = 0; r < BQ; r++)
            lse_lanes[r] = r < nq ? lse_bh[i0 - Q0 + r] : std::numeric_limits<float>::infinity();
          row_dots(delta_lanes, ob + ((i0 - Q0) * H + h) * D, dout + ((b * Tq + i0 - Q0) * H + h) * D, H * D, nq, D);
          std::fill(dQT.begin(), dQT.end(), 0.0f);

          for (int64_t j0 = mask.first_key(i0); j0 < i0 + nq; j0 += BK) {
            const int64_t nk = std::min(BK, i0 + nq - j0);
            const TileSpans spans(lanes, j0, nk);
            spans.for_each_run([&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
              dot(S.data() + r0 * BQ + c0 * 16, BQ, kg + (j0 + r0) * D, D, QT.data() + c0 * 32, BQ, (c1 - c0) * 16,
                  r1 - r0, D / 2, kFromZero);  // Sᵀ = K · Qᵀ
              dot(dP.data() + r0 * BQ + c0 * 16, BQ, vg + (j0 + r0) * D, D, dOT.data() + c0 * 32, BQ, (c1 - c0) * 16,
                  r1 - r0, D / 2, kFromZero);  // dPᵀ = V · dOᵀ
            });
            // P = exp(S − lse), dS = P ∘ (dP − delta), rounded: as rows of Pᵀ and dSᵀ, and dSᵀ in pairs of keys.
            for (int64_t c = spans.begin; c < spans.end; c++) {
              const int64_t lo = spans.lo[c], hi = spans.hi[c];
              if (spans.masked[c]) mask_vector(S.data(), lanes, c, j0, lo, hi);
              for (int part = 0; part < simd::kParts; part++) {  // native vectors (simd.h), each lane as before
                const int64_t lane0 = c * 16 + part * simd::kNativeWidth;
                const simd::native lse_c = simd::load<simd::native>(lse_lanes + lane0),
                                   delta_c = simd::load<simd::native>(delta_lanes + lane0);
                simd::native p[2], ds[2];
                for (int64_t j = lo; j < 2 * ((hi + 1) / 2); j++) {
                  const int64_t at = j * BQ + lane0;
                  p[j & 1] =
                      j < hi ? simd::exp(simd::load<simd::native>(S.data() + at) * scale - lse_c) : simd::native{};
                  ds[j & 1] = j < hi ? p[j & 1] * (simd::load<simd::native>(dP.data() + at) - delta_c) : simd::native{};
                  if (j & 1) store_pair(dSp.data() + ((j / 2) * BQ + lane0) * 2, ds[0], ds[1]);
                  if (j < hi) simd::store(S.data() + at, p[j & 1]), simd::store(dP.data() + at, ds[j & 1]);
                }
              }
            }
            spans.for_each_run([&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
              // Rounded in pairs of vectors: a neighbour outside [c0, c1) is rounded too, and never read.
              for (int64_t j = r0; j < r1; j++)
                for (int64_t c = c0 & ~int64_t(1); c < c1; c += 2) {
                  const int64_t at = j * BQ + c * 16;
                  store_row(P16.data() + at, simd::load(S.data() + at), simd::load(S.data() + at + 16));
                  store_row(dS16.data() + at, simd::load(dP.data() + at), simd::load(dP.data() + at + 16));
                }
              dot(dV + (j0 + r0) * D, D, P16.data() + r0 * BQ + c0 * 16, BQ, dOr.data() + c0 * 16 * D, D, D, r1 - r0,
                  (c1 - c0) * 8, kFromC);  // dV += Pᵀ · dO
              dot(dK + (j0 + r0) * D, D, dS16.data() + r0 * BQ + c0 * 16, BQ, Qr.data() + c0 * 16 * D, D, D, r1 - r0,
                  (c1 - c0) * 8, kFromC);  // dK += dSᵀ · Q
              const int64_t p0 = r0 / 2, p1 = (r1 + 1) / 2;
              dot(dQT.data() + c0 * 16, BQ, ktg + j0 + r0, Tp, dSp.data() + (p0 * BQ + c0 * 16) * 2, BQ, (c1 - c0) * 16,
                  D, p1 - p0, kFromC);  // dQᵀ += Kᵀ · dSᵀ
            });
          }
          for (int64_t i = 0; i < D * BQ; i += simd::kWidth)
            simd::store(dQT.data() + i, simd::load(dQT.data() + i) * scale);
          store_rows(dq + ((b * Tq + i0 - Q0) * H + h) * D, H * D, dQT.data(), nq, D);
        }
        key_gradients.write(b, h, dK, dV, scale);
      }
  }

  key_gradients.finish();
}

}  // namespace replica::cpu
