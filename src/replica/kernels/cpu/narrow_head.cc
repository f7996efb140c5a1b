// narrow_head.h. The logits: a tile is kLogitRows hidden rows × kLogitBlocks blocks of 16 vocabulary rows, 24 fp32
// accumulators, and per pair of columns kLogitBlocks loads of W and kLogitRows broadcasts of a hidden pair feeding 24
// dot products; the tiles of one stretch of vocabulary run over all rows while its 24 KiB of packed W stay in L1. dW: a
// tile is 32 vocabulary entries × kDweightColumns columns, 16 accumulators over all rows; the stripe of 32 entries is
// paired across rows once (a 64-byte line of each row, interleaved with the next row's) and then read from L1 by every
// column's tile. Each logit and each dW entry is summed by one thread in a fixed order: the same bits at any thread
// count.
#include "replica/kernels/cpu/narrow_head.h"

#include <algorithm>
#include <cstring>

#include "replica/core/error.h"
#include "replica/kernels/cpu/simd.h"
#include "replica/kernels/cpu/stretch_softmax.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__) && REPLICA_STRETCH512
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
static_assert(kLogitBlocks * kVocabLanes == kSoftmaxStretch, "a stretch of the softmax is a tile's vocabulary");

// Where a tile's logits go: each row's stretch of the softmax, its target's logit, and the exps (with exps).
struct LogitsOut {
  int64_t V;
  const int32_t* targets;  // [rows]
  float* exps;             // [rows, V], or null
  StretchSums stretches;   // [rows, count]
  float* target_logit;     // [rows]
};

// Rows r0 … r0 + R − 1 of h [·, C] (h at row r0) against blocks [0, NV) of w (packed): the logits of stretch s,
// finished as a stretch of the softmax while they are in registers (stretch512::exps, the instructions stretch_exps
// runs over oneDNN's logits: the softmax need not read them from memory); the exps go out with streaming stores where
// the row is aligned (a normal store reads each line before writing it, and the gradient pass reads them back from
// memory anyway: ~195 against ~150 GFLOP/s per thread, bench/RESULTS.md).
template <int R, int NV>
void logit_tile(const bf16* h, int64_t C, const bf16* w, int64_t r0, int64_t s, const LogitsOut& out) {
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
  const int64_t v0 = s * kSoftmaxStretch, n = std::min(kSoftmaxStretch, out.V - v0);
  const int live = int(n - (NV - 1) * kVocabLanes);  // lanes of the last block below V
  for (int r = 0; r < R; r++) {
    const int64_t row = r0 + r, at = row * out.stretches.count + s, t = out.targets[row] - v0;
    if (t >= 0 && t < n) {
      alignas(64) float block[kVocabLanes];
      for (int j = 0; j < NV; j++)
        if (j == t / kVocabLanes) _mm512_store_ps(block, acc[r][j]);
      out.target_logit[row] = block[t % kVocabLanes];
    }
    out.stretches.sum[at] = stretch512::exps(acc[r], NV, live, &out.stretches.max[at]);
    if (!out.exps) continue;
    float* exps = out.exps + row * out.V + v0;
    const bool stream = reinterpret_cast<uintptr_t>(exps) % 64 == 0;
    for (int j = 0; j < NV; j++) {
      if (j < NV - 1 || live == kVocabLanes) {
        if (stream)
          _mm512_stream_ps(exps + j * kVocabLanes, acc[r][j]);
        else
          _mm512_storeu_ps(exps + j * kVocabLanes, acc[r][j]);
      } else {
        _mm512_mask_storeu_ps(exps + j * kVocabLanes, __mmask16((1u << live) - 1), acc[r][j]);
      }
    }
  }
}

template <int R>
void tile_of_rows(int64_t blocks, const bf16* h, int64_t C, const bf16* w, int64_t r0, int64_t s,
                  const LogitsOut& out) {
  switch (blocks) {
    case 1:
      return logit_tile<R, 1>(h, C, w, r0, s, out);
    case 2:
      return logit_tile<R, 2>(h, C, w, r0, s, out);
    case 3:
      return logit_tile<R, 3>(h, C, w, r0, s, out);
    case 4:
      return logit_tile<R, 4>(h, C, w, r0, s, out);
    case 5:
      return logit_tile<R, 5>(h, C, w, r0, s, out);
    default:
      return logit_tile<R, kLogitBlocks>(h, C, w, r0, s, out);
  }
}

// A tile of `rows` ≤ kLogitRows rows and `blocks` ≤ kLogitBlocks blocks (the edges of the matrix are smaller tiles).
void any_tile(int64_t rows, int64_t blocks, const bf16* h, int64_t C, const bf16* w, int64_t r0, int64_t s,
              const LogitsOut& out) {
  switch (rows) {
    case 1:
      return tile_of_rows<1>(blocks, h, C, w, r0, s, out);
    case 2:
      return tile_of_rows<2>(blocks, h, C, w, r0, s, out);
    case 3:
      return tile_of_rows<3>(blocks, h, C, w, r0, s, out);
    default:
      return tile_of_rows<kLogitRows>(blocks, h, C, w, r0, s, out);
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

void pack_narrow_weight(const float* W32, const bf16* W16, int64_t V, int64_t C, HugePageVector<bf16>& packed) {
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

void narrow_logits(const float* hidden, int64_t rows, const bf16* packed, int64_t V, int64_t C, const int32_t* targets,
                   float* exps, StretchSums stretches, float* target_logit) {
#if REPLICA_NARROW_HEAD
  static thread_local std::vector<bf16> hidden16;  // the caller's; the workers read it
  hidden16.resize(size_t(rows * C));
  convert_to_bf16(hidden, hidden16.data(), size_t(rows * C));
  const bf16* h = hidden16.data();
  const LogitsOut out{V, targets, exps, stretches, target_logit};
  const int64_t blocks = (V + kVocabLanes - 1) / kVocabLanes;
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int64_t s = 0; s < stretches.count; s++) {
      const int64_t b0 = s * kLogitBlocks, nb = std::min<int64_t>(kLogitBlocks, blocks - b0);
      for (int64_t r = 0; r < rows; r += kLogitRows)
        any_tile(std::min<int64_t>(kLogitRows, rows - r), nb, h + r * C, C, packed + b0 * kVocabLanes * C, r, s, out);
    }
    if (exps) _mm_sfence();  // this worker's streaming stores reach memory before the caller reads the exps
  }
#else
  (void)hidden, (void)rows, (void)packed, (void)V, (void)C, (void)targets, (void)exps, (void)stretches,
      (void)target_logit;
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
