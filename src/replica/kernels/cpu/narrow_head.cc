// narrow_head.h. The logits: a tile is kLogitRows hidden rows × kLogitBlocks blocks of 16 vocabulary rows, 24 fp32
// accumulators, and per pair of columns kLogitBlocks loads of W and kLogitRows broadcasts of a hidden pair feeding 24
// dot products; the tiles of one stretch of vocabulary run over all rows while its 24 KiB of packed W stay in L1. dW: a
// tile is 32 vocabulary entries × kDweightColumns columns, 16 accumulators over all rows; the stripe of 32 entries is
// paired across rows once (a 64-byte line of each row, interleaved with the next row's) and then read from L1 by every
// column's tile. Each logit and each dW entry is summed by one thread in a fixed order: the same bits at any thread
// count.
#include "replica/kernels/cpu/narrow_head.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "replica/core/error.h"
#include "replica/kernels/cpu/simd.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
#define REPLICA_NARROW_HEAD 1
#include <immintrin.h>
#endif

namespace replica::cpu {

namespace {

constexpr int64_t kVocabLanes = 16;  // vocabulary rows per block: one vector of logits
constexpr int kLogitRows = 4, kLogitBlocks = 6;
constexpr int64_t kDweightStripe = 32;  // dW's vocabulary entries per stripe: one 64-byte line of a bf16 row
constexpr int kDweightColumns = 8;      // dW's columns per tile

#if REPLICA_NARROW_HEAD
// Rows [0, R) of h [·, C] against blocks [0, NV) of w (packed): the logits of vocabulary rows v0 … v0 + 16 NV − 1
// that are below V, into out (row stride V), streamed past the caches where out is aligned (the softmax reads them
// back from memory whichever way they are stored, and a normal store reads each line before writing it: ~195 against
// ~150 GFLOP/s per thread, bench/RESULTS.md); each row's largest of them into its 16 lanes of maxima.
template <int R, int NV>
void logit_tile(float* out, int64_t V, int64_t v0, const bf16* h, int64_t C, const bf16* w, float* maxima) {
  const int64_t pairs = C / 2;
  __m512 acc[R][NV];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < NV; j++) acc[r][j] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; p++) {
    __m512bh b[NV];
    for (int j = 0; j < NV; j++) b[j] = (__m512bh)_mm512_loadu_si512(w + (j * pairs + p) * 2 * kVocabLanes);
    for (int r = 0; r < R; r++) {
      int32_t pair;
      std::memcpy(&pair, h + r * C + 2 * p, sizeof pair);
      const __m512bh a = (__m512bh)_mm512_set1_epi32(pair);
      for (int j = 0; j < NV; j++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], a, b[j]);
    }
  }
  for (int r = 0; r < R; r++) {
    __m512 m = _mm512_loadu_ps(maxima + r * kVocabLanes);
    for (int j = 0; j < NV; j++) {
      const int64_t v = v0 + j * kVocabLanes;
      float* at = out + r * V + v;
      if (v + kVocabLanes <= V) {
        m = _mm512_mask_max_ps(m, 0xffff, m, acc[r][j]);  // (GCC 12 warns of _mm512_max_ps's undefined source)
        if (reinterpret_cast<uintptr_t>(at) % 64 == 0)
          _mm512_stream_ps(at, acc[r][j]);
        else
          _mm512_storeu_ps(at, acc[r][j]);
      } else {
        const __mmask16 below_v = __mmask16((1u << (V - v)) - 1);
        m = _mm512_mask_max_ps(m, below_v, m, acc[r][j]);
        _mm512_mask_storeu_ps(at, below_v, acc[r][j]);
      }
    }
    _mm512_storeu_ps(maxima + r * kVocabLanes, m);
  }
}

template <int R>
void tile_of_rows(int64_t blocks, float* out, int64_t V, int64_t v0, const bf16* h, int64_t C, const bf16* w,
                  float* maxima) {
  switch (blocks) {
    case 1:
      return logit_tile<R, 1>(out, V, v0, h, C, w, maxima);
    case 2:
      return logit_tile<R, 2>(out, V, v0, h, C, w, maxima);
    case 3:
      return logit_tile<R, 3>(out, V, v0, h, C, w, maxima);
    case 4:
      return logit_tile<R, 4>(out, V, v0, h, C, w, maxima);
    case 5:
      return logit_tile<R, 5>(out, V, v0, h, C, w, maxima);
    default:
      return logit_tile<R, kLogitBlocks>(out, V, v0, h, C, w, maxima);
  }
}

// A tile of `rows` ≤ kLogitRows rows and `blocks` ≤ kLogitBlocks blocks (the edges of the matrix are smaller tiles).
void any_tile(int64_t rows, int64_t blocks, float* out, int64_t V, int64_t v0, const bf16* h, int64_t C, const bf16* w,
              float* maxima) {
  switch (rows) {
    case 1:
      return tile_of_rows<1>(blocks, out, V, v0, h, C, w, maxima);
    case 2:
      return tile_of_rows<2>(blocks, out, V, v0, h, C, w, maxima);
    case 3:
      return tile_of_rows<3>(blocks, out, V, v0, h, C, w, maxima);
    default:
      return tile_of_rows<kLogitRows>(blocks, out, V, v0, h, C, w, maxima);
  }
}

// Two rows' 16 bf16 at one position each, interleaved: lane i holds (row a's i-th, row b's i-th) as one pair.
struct alignas(64) RowPairs {
  __m512i lanes;
};

// The stripe v0 … v0 + 31 of dlogits' rows, paired: pairs[2p + half] holds rows 2p and 2p + 1 (a zero row past the
// last) at v0 + 16 · half + i in lane i, and zeros past V.
void pair_stripe(const bf16* dlogits, int64_t rows, int64_t V, int64_t v0, RowPairs* pairs) {
  // vpermt2w indices: word 2i from the first operand's word i, word 2i + 1 from the second's (32 + i).
  alignas(64) static const uint16_t kFirstHalf[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static const uint16_t kSecondHalf[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                       24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i first = _mm512_load_si512(kFirstHalf), second = _mm512_load_si512(kSecondHalf);
  const __mmask32 below_v = V - v0 >= kDweightStripe ? ~__mmask32(0) : __mmask32((1u << (V - v0)) - 1);
  for (int64_t p = 0; 2 * p < rows; p++) {
    const __m512i a = _mm512_maskz_loadu_epi16(below_v, dlogits + 2 * p * V + v0);
    const __m512i b =
        2 * p + 1 < rows ? _mm512_maskz_loadu_epi16(below_v, dlogits + (2 * p + 1) * V + v0) : _mm512_setzero_si512();
    pairs[2 * p].lanes = _mm512_permutex2var_epi16(a, first, b);
    pairs[2 * p + 1].lanes = _mm512_permutex2var_epi16(a, second, b);
  }
}

// dW rows v0 … v0 + 31 (those below V), columns c0 … c0 + 7 += Σ over the row pairs p of pairs[2p + half] ·
// hidden_pairs[p · 8 + c]: 16 chains of vdpbf16ps, then added to dW by 8 × 8 transposes. With prefetch, also loads the
// lines of the next stripe (prefetch + row · V) into the cache while the dot products run.
void dweight_tile(const RowPairs* pairs, int64_t rows, const uint32_t* hidden_pairs, float* dW, int64_t V, int64_t C,
                  int64_t v0, int64_t c0, const bf16* prefetch) {
  __m512 acc[2][kDweightColumns];
  for (int half = 0; half < 2; half++)
    for (int c = 0; c < kDweightColumns; c++) acc[half][c] = _mm512_setzero_ps();
  for (int64_t p = 0; 2 * p < rows; p++) {
    if (prefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(prefetch + 2 * p * V), _MM_HINT_T0);
      if (2 * p + 1 < rows) _mm_prefetch(reinterpret_cast<const char*>(prefetch + (2 * p + 1) * V), _MM_HINT_T0);
    }
    const __m512bh a0 = (__m512bh)pairs[2 * p].lanes, a1 = (__m512bh)pairs[2 * p + 1].lanes;
    for (int c = 0; c < kDweightColumns; c++) {
      const __m512bh b = (__m512bh)_mm512_set1_epi32(int32_t(hidden_pairs[p * kDweightColumns + c]));
      acc[0][c] = _mm512_dpbf16_ps(acc[0][c], a0, b);
      acc[1][c] = _mm512_dpbf16_ps(acc[1][c], a1, b);
    }
  }
  for (int half = 0; half < 2; half++) {
    alignas(64) float sums[kDweightColumns][kVocabLanes];  // sums[c][i]: dW row v0 + 16 · half + i, column c0 + c
    for (int c = 0; c < kDweightColumns; c++) _mm512_store_ps(sums[c], acc[half][c]);
    for (int part = 0; part < 2; part++) {  // lanes 8 · part … 8 · part + 7
      simd::f8v block[kDweightColumns], rows_of_dw[8];
      for (int c = 0; c < kDweightColumns; c++) block[c] = simd::load<simd::f8v>(sums[c] + 8 * part);
      simd::transpose8(rows_of_dw, block);  // rows_of_dw[i][c] = sums[c][8 · part + i]
      for (int i = 0; i < 8; i++) {
        const int64_t v = v0 + 16 * half + 8 * part + i;
        if (v >= V) break;
        float* out = dW + v * C + c0;
        simd::store(out, simd::load<simd::f8v>(out) + rows_of_dw[i]);
      }
    }
  }
}
#endif

}  // namespace

bool narrow_head_available(int64_t C) {
#if REPLICA_NARROW_HEAD
  return C % kDweightColumns == 0 && C <= 256;
#else
  (void)C;
  return false;
#endif
}

void pack_narrow_weight(const float* W32, const bf16* W16, int64_t V, int64_t C, std::vector<bf16>& packed) {
  const int64_t blocks = (V + kVocabLanes - 1) / kVocabLanes, pairs = C / 2;
  packed.resize(size_t(blocks * kVocabLanes * C));
  bf16* out = packed.data();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; b++)
    for (int64_t lane = 0; lane < kVocabLanes; lane++) {
      const int64_t v = b * kVocabLanes + lane;
      for (int64_t p = 0; p < pairs; p++)
        for (int64_t e = 0; e < 2; e++)
          out[((b * pairs + p) * kVocabLanes + lane) * 2 + e] = v >= V ? bf16{0}
                                                                : W16  ? W16[v * C + 2 * p + e]
                                                                       : to_bf16(W32[v * C + 2 * p + e]);
    }
}

void narrow_logits(const float* hidden, int64_t rows, const bf16* packed, int64_t V, int64_t C, float* logits,
                   float* row_max) {
#if REPLICA_NARROW_HEAD
  // The caller's; the workers read and write them. maxima[(t · rows + r) · 16 + lane]: worker t's 16 lanes of row
  // r's largest logit.
  static thread_local std::vector<bf16> hidden16;
  static thread_local std::vector<float> maxima;
  hidden16.resize(size_t(rows * C));
  convert_to_bf16(hidden, hidden16.data(), size_t(rows * C));
  const bf16* h = hidden16.data();
  const int workers = omp_get_max_threads();
  maxima.assign(size_t(workers * rows * kVocabLanes), -std::numeric_limits<float>::infinity());
  float* lane_maxima = maxima.data();  // (inside the parallel region `maxima` would name each worker's own)
  const int64_t blocks = (V + kVocabLanes - 1) / kVocabLanes, stretches = (blocks + kLogitBlocks - 1) / kLogitBlocks;
#pragma omp parallel num_threads(workers)
  {
    float* mine = lane_maxima + omp_get_thread_num() * rows * kVocabLanes;
#pragma omp for schedule(static) nowait
    for (int64_t s = 0; s < stretches; s++) {
      const int64_t b0 = s * kLogitBlocks, nb = std::min<int64_t>(kLogitBlocks, blocks - b0);
      for (int64_t r = 0; r < rows; r += kLogitRows)
        any_tile(std::min<int64_t>(kLogitRows, rows - r), nb, logits + r * V, V, b0 * kVocabLanes, h + r * C, C,
                 packed + b0 * kVocabLanes * C, mine + r * kVocabLanes);
    }
    _mm_sfence();  // this worker's streaming stores reach memory before the caller reads the logits
  }
  // A maximum is exact in any order; the workers and lanes in a fixed one all the same.
  for (int64_t r = 0; r < rows; r++) {
    float m = maxima[size_t(r * kVocabLanes)];
    for (int t = 0; t < workers; t++)
      for (int64_t lane = 0; lane < kVocabLanes; lane++)
        m = std::max(m, maxima[size_t((t * rows + r) * kVocabLanes + lane)]);
    row_max[r] = m;
  }
#else
  (void)hidden, (void)rows, (void)packed, (void)V, (void)C, (void)logits, (void)row_max;
  throw Error("narrow_logits: this build has no AVX512-BF16 (narrow_head_available is false)");
#endif
}

void narrow_dweight(const bf16* dlogits, int64_t rows, int64_t V, const float* hidden, int64_t C, float* dW) {
#if REPLICA_NARROW_HEAD
  // hidden_pairs[(c / 8 · row_pairs + p) · 8 + c % 8]: rows 2p and 2p + 1 of column c, rounded, as one pair (a zero
  // row past the last); a tile's 8 columns over all row pairs are contiguous. The caller's; workers use the pointer.
  static thread_local std::vector<uint32_t> hidden_pairs_buffer;
  const int64_t row_pairs = (rows + 1) / 2;
  hidden_pairs_buffer.resize(size_t(C * row_pairs));
  uint32_t* hidden_pairs = hidden_pairs_buffer.data();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < row_pairs; p++)
    for (int64_t c = 0; c < C; c++) {
      const uint32_t first = to_bf16(hidden[2 * p * C + c]).bits;
      const uint32_t second = 2 * p + 1 < rows ? to_bf16(hidden[(2 * p + 1) * C + c]).bits : 0u;
      const int64_t at = (c / kDweightColumns * row_pairs + p) * kDweightColumns + c % kDweightColumns;
      hidden_pairs[at] = first | second << 16;
    }
  const int64_t stripes = (V + kDweightStripe - 1) / kDweightStripe;
#pragma omp parallel
  {
    static thread_local std::vector<RowPairs> pairs;  // this worker's stripe: 64 bytes per row
    pairs.resize(size_t(2 * row_pairs));
#pragma omp for schedule(static) nowait
    for (int64_t s = 0; s < stripes; s++) {
      const int64_t v0 = s * kDweightStripe;
      pair_stripe(dlogits, rows, V, v0, pairs.data());
      // The next stripe (this worker's, under the static schedule) is prefetched during the first column tile.
      const bf16* next = s + 1 < stripes ? dlogits + v0 + kDweightStripe : nullptr;
      for (int64_t c0 = 0; c0 < C; c0 += kDweightColumns)
        dweight_tile(pairs.data(), rows, hidden_pairs + c0 * row_pairs, dW, V, C, v0, c0, c0 == 0 ? next : nullptr);
    }
  }
#else
  (void)dlogits, (void)rows, (void)V, (void)hidden, (void)C, (void)dW;
  throw Error("narrow_dweight: this build has no AVX512-BF16 (narrow_head_available is false)");
#endif
}

}  // namespace replica::cpu
