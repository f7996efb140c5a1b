// Chunked LM head + cross-entropy + z-loss, forward and backward in one sweep.
#include "replica/kernels/cpu/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/narrow_head.h"
#include "replica/kernels/cpu/simd.h"
#include "replica/kernels/cpu/stretch_softmax.h"

namespace replica::cpu {

namespace {

// Per row of a chunk: its stretches of the softmax (stretch_softmax.h), the factors softmax_row makes of them, and
// its target's logit. Kept between calls, as the logits are.
struct RowStretches {
  std::vector<float> max, sum, factor, target_logit;
  int64_t count = 0;

  void resize(int64_t rows, int64_t V) {
    count = stretches_of(V);
    for (std::vector<float>* v : {&max, &sum, &factor}) v->resize(size_t(rows * count));
    target_logit.resize(size_t(rows));
  }
  StretchSums all() { return {max.data(), sum.data(), count}; }
  StretchSums row(int64_t r) { return {max.data() + r * count, sum.data() + r * count, count}; }
  float* factors(int64_t r) { return factor.data() + r * count; }
};

// One labelled row: its cross-entropy and z-loss terms from its stretches and its target's logit. For the backward
// (grads), factor[s] becomes the number by which stretch s's exps give the gradient of (ce + z_coef·lse²) · grad_scale,
// e_j · factor[s] − [j = target] · grad_scale: d/dlogit_j of (ce + z_coef·lse²) = p_j · (1 + 2·z_coef·lse) − [j =
// target], p_j = e_j · exp(m_s − M) / Σ.
void softmax_row(StretchSums sums, float target_logit, float z_coef, const LmHeadGrads* grads, float* factor,
                 double* ce, double* z) {
  float M;
  const double sum = row_sum_of_exps(sums, factor, &M);
  const double lse = double(M) + std::log(sum);
  *ce = lse - double(target_logit);
  *z = lse * lse;
  if (!grads) return;
  const float k = float((1.0 + 2.0 * z_coef * lse) / sum) * grads->grad_scale;
#pragma omp simd
  for (int64_t s = 0; s < sums.count; s++) factor[s] *= k;
}

// The row's logit gradients in place of its exps e[0, V) (rounded to bf16 values with kRound): e_j · factor[s] and,
// at the target, e_j · factor[s] − grad_scale.
template <bool kRound>
void gradient_row_in_place(float* e, int64_t V, const float* factor, int32_t target, float grad_scale) {
  const float target_gradient = e[target] * factor[target / kSoftmaxStretch] - grad_scale;
  for (int64_t v0 = 0, s = 0; v0 < V; v0 += kSoftmaxStretch, s++) {
    const int64_t n = std::min(kSoftmaxStretch, V - v0);
    const float k = factor[s];
#pragma omp simd
    for (int64_t j = v0; j < v0 + n; j++) e[j] = kRound ? round_to_bf16(e[j] * k) : e[j] * k;
  }
  e[target] = kRound ? round_to_bf16(target_gradient) : target_gradient;
}

// The same gradients rounded to bf16 into g. Where g is 64-byte aligned each stretch goes through a block in L1 and
// is streamed past the caches: the group of rows (up to 128 MB) is read next by the backward GEMMs, from memory
// whatever the stores do, and normal stores would read every line before writing it (bench/RESULTS.md, issue 34).
// The same values either way.
void write_gradient_row(const float* e, int64_t V, const float* factor, int32_t target, float grad_scale, bf16* g) {
  alignas(64) bf16 block[kSoftmaxStretch];  // three lines
  constexpr size_t kLines = sizeof(block) / 64;
  static_assert(sizeof(block) % 64 == 0);
  const bool stream = reinterpret_cast<uintptr_t>(g) % 64 == 0;
  for (int64_t v0 = 0, s = 0; v0 < V; v0 += kSoftmaxStretch, s++) {
    const int64_t n = std::min(kSoftmaxStretch, V - v0);
    const float k = factor[s];
    bf16* out = stream && n == kSoftmaxStretch ? block : g + v0;
#pragma omp simd
    for (int64_t j = 0; j < n; j++) out[j] = to_bf16(e[v0 + j] * k);
    if (target >= v0 && target < v0 + n) out[target - v0] = to_bf16(e[target] * k - grad_scale);
    if (out == block) simd::stream_lines(g + v0, block, kLines);
  }
  simd::stream_fence();
}

// The first 64-byte aligned element of a buffer allocated with 64 bytes to spare: the rows of V elements that follow
// start on cache lines (for V a multiple of 16 floats or 32 bf16, as the padded vocabularies are), so the logits and
// their gradients can be streamed to memory.
template <typename T>
T* aligned_64(T* p) {
  return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64 / sizeof(T);
}

// out [rows, cols] = srcᵀ for src [cols, rows] (added to out when accumulate), by 64 × 64 tiles of 8 × 8 blocks
// transposed in registers (simd::transpose8), the tiles' ragged edges one element at a time. Each element is moved, or
// added to out once, as a scalar loop would: the same bits.
void transpose(const float* src, int64_t rows, int64_t cols, float* out, bool accumulate) {
  constexpr int64_t kTile = 64;
  auto one = [&](int64_t r, int64_t c) {
    const float x = src[c * rows + r];
    out[r * cols + c] = accumulate ? out[r * cols + c] + x : x;
  };
#pragma omp parallel for schedule(static)
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(r0 + kTile, rows), c1 = std::min(c0 + kTile, cols);
      const int64_t r8 = r0 + (r1 - r0) / 8 * 8, c8 = c0 + (c1 - c0) / 8 * 8;  // the 8 × 8 blocks end here
      for (int64_t r = r0; r < r8; r += 8)
        for (int64_t c = c0; c < c8; c += 8) {
          simd::f8v block[8], t[8];
          for (int k = 0; k < 8; k++) block[k] = simd::load<simd::f8v>(src + (c + k) * rows + r);
          simd::transpose8(t, block);  // t[j][k] = src[(c + k) · rows + r + j]
          for (int j = 0; j < 8; j++) {
            float* o = out + (r + j) * cols + c;
            simd::store(o, accumulate ? simd::load<simd::f8v>(o) + t[j] : t[j]);
          }
        }
      for (int64_t r = r0; r < r1; r++)
        for (int64_t c = (r < r8 ? c8 : c0); c < c1; c++) one(r, c);
    }
}

// bf16 on a CPU where oneDNN has no bf16 matmul (gemm.cc runs it as the fp32 matmul over widened, rounded operands).
// Here the operands are rounded once per call and kept in fp32: the weight and hidden states up front, each logit
// gradient as it is written, in place. gemm would otherwise widen the 100,352-row weight for every product and the
// logit gradients for both backward products. The same rounded values through the same fp32 matmuls, so the loss,
// dhidden and (for wide heads) dW keep the bits gemm's widening gave them.
//
// A narrow head (C ≤ kNarrowHead) sums dW as dWᵀ = hiddenᵀ · dlogits into a [C, V] accumulator over the call's
// groups, added into dweight once: oneDNN's AVX2 fp32 matmul runs dlogitsᵀ · hidden with 128 or 256 output columns at
// ~35 GFLOP/s of its ~85 (1 thread), the transposed form with the final add at ~50, while from C = 384 the direct form
// runs near the peak and the add would only cost (bench/RESULTS.md). Another fp32 sum order for dW, as deterministic.
constexpr int64_t kNarrowHead = 256;

// Where the narrow head's own kernels run (narrow_head.h): from 128 rows per call, below which packing W per call costs
// more than they save; with at most 512 rows per group, the rows oneDNN's bf16 kernel sums dW over in one chain, so
// that dW keeps its bits (bench/RESULTS.md, issue 34).
constexpr int64_t kOwnKernelsFromRows = 128, kOwnKernelsGroupRows = 512;

void lm_head_loss_on_rounded_fp32(const float* hidden, WeightRef weight, const int32_t* targets, int64_t N, int64_t C,
                                  int64_t V, float z_coef, const LmHeadGrads* grads, int64_t chunk, int64_t group,
                                  double* row_ce, double* row_z) {
  static thread_local HugePageVector<float> hidden_buffer, weight_buffer, logits_buffer, dhidden_t_buffer,
      dweight_t_buffer;
  static thread_local RowStretches stretches_buffer;
  if (!grads) group = chunk;
  stretches_buffer.resize(group, V);
  RowStretches* stretches = &stretches_buffer;  // (inside the parallel region the name is each worker's own)
  hidden_buffer.resize(size_t(N * C));
  weight_buffer.resize(size_t(V * C));
  logits_buffer.resize(size_t(group * V));
  float* hidden_r = hidden_buffer.data();
  float* weight_r = weight_buffer.data();
  float* logits = logits_buffer.data();
  round_to_bf16(hidden, nullptr, hidden_r, size_t(N * C));
  round_to_bf16(weight.f32, weight.b16, weight_r, size_t(V * C));
  const bool narrow = C <= kNarrowHead;
  if (grads) {
    dhidden_t_buffer.resize(size_t(C * group));
    if (narrow) dweight_t_buffer.resize(size_t(C * V));
  }

  for (int64_t g0 = 0; g0 < N; g0 += group) {
    const int64_t rows = std::min(group, N - g0);
    // logits = hidden · Wᵀ, by chunks as gemm's widening ran them (a chunk's bits depend on its row count)
    for (int64_t n0 = 0; n0 < rows; n0 += chunk)
      gemm(false, true, std::min(chunk, rows - n0), V, C, hidden_r + (g0 + n0) * C, C, weight_r, C, logits + n0 * V, V,
           false, Precision::fp32);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      const int32_t target = targets[g0 + r];
      float* l = logits + r * V;
      if (target == kIgnoreLabel) {
        if (grads) std::fill(l, l + V, 0.0f);
        continue;
      }
      const float target_logit = l[target];
      row_stretch_exps(l, V, grads != nullptr, stretches->row(r));
      softmax_row(stretches->row(r), target_logit, z_coef, grads, stretches->factors(r), &row_ce[g0 + r],
                  &row_z[g0 + r]);
      if (grads) gradient_row_in_place<true>(l, V, stretches->factors(r), target, grads->grad_scale);
    }
    if (!grads) continue;
    // dhiddenᵀ = Wᵀ · dlogitsᵀ, transposed into dhidden; dW += dlogitsᵀ · hidden, or dWᵀ (+)= hiddenᵀ · dlogits.
    gemm(true, true, C, rows, V, weight_r, C, logits, V, dhidden_t_buffer.data(), rows, false, Precision::fp32);
    transpose(dhidden_t_buffer.data(), rows, C, grads->dhidden + g0 * C, false);
    if (narrow)
      gemm(true, false, C, V, rows, hidden_r + g0 * C, C, logits, V, dweight_t_buffer.data(), V, g0 > 0,
           Precision::fp32);
    else
      gemm(true, false, V, C, rows, logits, V, hidden_r + g0 * C, C, grads->dweight, C, true, Precision::fp32);
  }
  if (grads && narrow) transpose(dweight_t_buffer.data(), V, C, grads->dweight, true);
}

}  // namespace

LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* targets, int64_t N, int64_t C, int64_t V,
                      float z_coef, Precision precision, const LmHeadGrads* grads, LmHeadBf16Path bf16_path) {
  if (bf16_path == LmHeadBf16Path::automatic)
    bf16_path = native_bf16_gemm() ? LmHeadBf16Path::narrow_head : LmHeadBf16Path::rounded_fp32;
  const bool bf = precision == Precision::bf16;
  const bool write_bf16 = grads && bf;
  // A narrow head's bf16 logits and dW on our own dot products where the CPU has them, with oneDNN's bits
  // (narrow_head.h); where they do not apply, narrow_head is per_product.
  const bool own_kernels = bf && bf16_path == LmHeadBf16Path::narrow_head && N >= kOwnKernelsFromRows &&
                           native_bf16_gemm() && narrow_head_available(C);
  // Up to 16M logits (64 MB) per chunk.
  int64_t chunk = std::clamp<int64_t>((int64_t(1) << 24) / V, 1, N);
  // In bf16 the logit gradients are written rounded, straight into the backward GEMMs' operand, and gathered over a
  // group of up to 64M (128 MB, four chunks) so that the backward GEMMs run once per group: dW's sum over rows then
  // reads and writes the [V, C] accumulator once per group instead of once per chunk, and the GEMMs reduce over
  // more rows per call (bench/RESULTS.md, issue 34). In fp32 the backward runs per chunk on the fp32 gradients.
  int64_t group = bf ? std::clamp<int64_t>((int64_t(1) << 26) / V / chunk * chunk, chunk, N) : chunk;
  if (own_kernels) {
    // Groups of equal size, of chunks of equal size (2,048 rows at V = 100,352: 4 × 512 = 4 × 4 × 128, not
    // 3 × 668 + 44): the backward GEMMs of a short last group run far below the peak. Where oneDNN computes the
    // logits their bits depend on the chunk's row count, so the other paths keep theirs.
    group = std::min(group, kOwnKernelsGroupRows);
    const int64_t groups = (N + group - 1) / group;
    group = (N + groups - 1) / groups;
    const int64_t chunks_per_group = (group + chunk - 1) / chunk;
    chunk = (group + chunks_per_group - 1) / chunks_per_group;
  }
  // Kept between calls: the chunk is tens of MB and page-faulting it in every step costs more than a GEMM.
  // (Thread-local to the caller; OpenMP workers below use the plain pointers.)
  static thread_local HugePageVector<float> logits_buffer, dhidden_t_buffer;
  static thread_local std::vector<double> ce_buffer, z_buffer;
  static thread_local HugePageVector<bf16> grad16_buffer;
  ce_buffer.assign(size_t(N), 0.0);
  z_buffer.assign(size_t(N), 0.0);
  double* row_ce = ce_buffer.data();
  double* row_z = z_buffer.data();

  if (bf && bf16_path == LmHeadBf16Path::rounded_fp32) {
    lm_head_loss_on_rounded_fp32(hidden, weight, targets, N, C, V, z_coef, grads, chunk, group, row_ce, row_z);
  } else {
    logits_buffer.resize(size_t(chunk * V + 16));
    // oneDNN's bf16 kernel runs a narrow head's dlogits · W faster than the transposed form, which the fp32 matmul (a
    // CPU without that kernel) and a wide head run faster (bench/RESULTS.md, issue 34).
    const bool dhidden_directly = C <= kNarrowHead && native_bf16_gemm();
    // The own logits kernel's operand: W packed once per call, or kept from the last call while the rounded weights
    // it came from are the same (their generation: a step's micro-batches, and evaluations, share one packing).
    struct PackedFrom {
      const bf16* b16;
      uint64_t generation;
      int64_t V, C;
      bool operator==(const PackedFrom&) const = default;
    };
    static thread_local HugePageVector<bf16> packed_weight;
    static thread_local PackedFrom packed_from{};
    if (own_kernels) {
      const PackedFrom from{weight.b16, weight.generation, V, C};
      if (weight.generation == 0 || from != packed_from)
        pack_narrow_weight(weight.f32, weight.b16, V, C, packed_weight);
      packed_from = from;
    }
    static thread_local RowStretches stretches_buffer;
    stretches_buffer.resize(chunk, V);
    RowStretches* stretches = &stretches_buffer;  // (inside the parallel region the name is each worker's own)
    if (write_bf16) {
      grad16_buffer.resize(size_t(group * V + 32));
      if (!dhidden_directly) dhidden_t_buffer.resize(size_t(C * group));
    }
    bf16* grad16 = write_bf16 ? aligned_64(grad16_buffer.data()) : nullptr;
    float* logits = aligned_64(logits_buffer.data());
    const int64_t backward_group = write_bf16 ? group : chunk;
    for (int64_t g0 = 0; g0 < N; g0 += backward_group) {
      const int64_t group_rows = std::min(backward_group, N - g0);
      for (int64_t n0 = g0; n0 < g0 + group_rows; n0 += chunk) {
        const int64_t rows = std::min(chunk, g0 + group_rows - n0);
        bf16* chunk16 = grad16 ? grad16 + (n0 - g0) * V : nullptr;
        // logits = hidden · Wᵀ, or from the own kernel each stretch's largest logit and sum of exps (with grads, its
        // exps: the forward alone writes nothing per logit), and the targets' logits
        if (own_kernels)
          narrow_logits(hidden + n0 * C, rows, packed_weight.data(), V, C, targets + n0, grads ? logits : nullptr,
                        stretches->all(), stretches->target_logit.data());
        else
          gemm(false, true, rows, V, C, hidden + n0 * C, C, weight.f32, C, logits, V, false, precision, weight.b16);
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
          const int32_t target = targets[n0 + r];
          float* l = logits + r * V;
          if (target == kIgnoreLabel) {
            if (chunk16)
              std::fill(chunk16 + r * V, chunk16 + (r + 1) * V, bf16{0});
            else if (grads)
              std::fill(l, l + V, 0.0f);
            continue;
          }
          if (!own_kernels) {
            stretches->target_logit[size_t(r)] = l[target];
            row_stretch_exps(l, V, grads != nullptr, stretches->row(r));
          }
          float* factor = stretches->factors(r);
          softmax_row(stretches->row(r), stretches->target_logit[size_t(r)], z_coef, grads, factor, &row_ce[n0 + r],
                      &row_z[n0 + r]);
          if (!grads) continue;
          if (chunk16)
            write_gradient_row(l, V, factor, target, grads->grad_scale, chunk16 + r * V);
          else
            gradient_row_in_place<false>(l, V, factor, target, grads->grad_scale);
        }
        if (!grads || write_bf16) continue;
        // dhidden = dlogits · W,  dW += dlogitsᵀ · hidden
        gemm(false, false, rows, C, V, logits, V, weight.f32, C, grads->dhidden + n0 * C, C, false, precision);
        gemm(true, false, V, C, rows, logits, V, hidden + n0 * C, C, grads->dweight, C, true, precision);
      }
      if (!write_bf16) continue;
      // The group's backward from the bf16 dlogits: dhidden = dlogits · W, or for a wide head dhiddenᵀ = Wᵀ · dlogitsᵀ
      // transposed into dhidden (the form oneDNN runs faster there); dW += dlogitsᵀ · hidden.
      if (dhidden_directly) {
        gemm(false, false, group_rows, C, V, logits, V, weight.f32, C, grads->dhidden + g0 * C, C, false, precision,
             weight.b16, grad16);
      } else {
        float* dhidden_t = dhidden_t_buffer.data();
        gemm(true, true, C, group_rows, V, weight.f32, C, logits, V, dhidden_t, group_rows, false, precision, grad16,
             weight.b16);
        transpose(dhidden_t, group_rows, C, grads->dhidden + g0 * C, false);
      }
      if (own_kernels)
        narrow_dweight(grad16, group_rows, V, hidden + g0 * C, C, grads->dweight);
      else
        gemm(true, false, V, C, group_rows, logits, V, hidden + g0 * C, C, grads->dweight, C, true, precision, nullptr,
             grad16);
    }
  }

  LossSums sums;
  for (int64_t n = 0; n < N; n++) {
    if (targets[n] == kIgnoreLabel) continue;
    sums.ce += row_ce[size_t(n)];
    sums.z += row_z[size_t(n)];
    sums.n_labels++;
  }
  return sums;
}

}  // namespace replica::cpu
