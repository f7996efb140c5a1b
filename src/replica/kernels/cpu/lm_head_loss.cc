// Chunked LM head + cross-entropy + z-loss, forward and backward in one sweep.
#include "replica/kernels/cpu/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/narrow_head.h"
#include "replica/kernels/cpu/simd.h"

namespace replica::cpu {

namespace {

// Σ exp(x[i] − shift) accumulated in 16 fp32 lanes, then in double (a fixed order); with kKeep, x[i] becomes the
// exponential (the backward's operand; the forward alone needs only the sum, and not writing the row saves a pass).
// The 16 lanes are simd::kParts native vectors (simd.h).
template <bool kKeep>
double exp_and_sum(float* x, int64_t n, float shift) {
  simd::native lanes[simd::kParts] = {};
  int64_t i = 0;
  for (; i + simd::kWidth <= n; i += simd::kWidth)
    for (int p = 0; p < simd::kParts; p++) {
      float* at = x + i + p * simd::kNativeWidth;
      const simd::native e = simd::exp(simd::load<simd::native>(at) - shift);
      if constexpr (kKeep) simd::store(at, e);
      lanes[p] += e;
    }
  double sum = 0.0;
  for (; i < n; i++) {
    const float e = simd::exp(simd::splat(x[i] - shift))[0];
    if constexpr (kKeep) x[i] = e;
    sum += e;
  }
  for (int j = 0; j < simd::kWidth; j++) sum += simd::lane(lanes, j);
  return sum;
}

// One labelled row: its cross-entropy and z-loss terms from its logits l[0, V) and their largest, m. For the
// backward (grads), leaves exp(logit − m) in l and returns k, with which the gradient of
// (ce + z_coef·lse²) · grad_scale is l_j · k − [j = target] · grad_scale:
// d/dlogit_j of (ce + z_coef·lse²) = p_j · (1 + 2·z_coef·lse) − [j = target].
float softmax_row(float* l, float m, int64_t V, int32_t target, float z_coef, const LmHeadGrads* grads, double* ce,
                  double* z) {
  const float target_logit = l[target];
  const double sum = grads ? exp_and_sum<true>(l, V, m) : exp_and_sum<false>(l, V, m);
  const double lse = double(m) + std::log(sum);
  *ce = lse - double(target_logit);
  *z = lse * lse;
  return grads ? float((1.0 + 2.0 * z_coef * lse) / sum) * grads->grad_scale : 0.0f;
}

// g[j] = to_bf16(l[j] · k) for j in [0, V), g[target] = to_bf16(target_gradient): a row of bf16 logit gradients.
// Where g is 64-byte aligned the row goes through a block in L1 and is streamed past the caches: the group of rows
// (up to 128 MB) is read next by the backward GEMMs, from memory whatever the stores do, and normal stores would read
// every line before writing it (bench/RESULTS.md, issue 34). The same values either way.
void write_gradient_row(const float* l, int64_t V, float k, int32_t target, float target_gradient, bf16* g) {
  constexpr int64_t kBlock = 512;  // 1 KiB of bf16, 16 lines
  alignas(64) bf16 block[kBlock];
  const bool stream = reinterpret_cast<uintptr_t>(g) % 64 == 0;
  for (int64_t j0 = 0; j0 < V; j0 += kBlock) {
    const int64_t n = std::min(kBlock, V - j0);
    bf16* out = stream && n == kBlock ? block : g + j0;
#pragma omp simd
    for (int64_t j = 0; j < n; j++) out[j] = to_bf16(l[j0 + j] * k);
    if (target >= j0 && target < j0 + n) out[target - j0] = to_bf16(target_gradient);
    if (out == block) simd::stream_lines(g + j0, block, kBlock * sizeof(bf16) / 64);
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
  static thread_local std::vector<float> hidden_buffer, weight_buffer, logits_buffer, dhidden_t_buffer,
      dweight_t_buffer;
  if (!grads) group = chunk;
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
      const float k = softmax_row(l, simd::max_of(l, V), V, target, z_coef, grads, &row_ce[g0 + r], &row_z[g0 + r]);
      if (!grads) continue;
      const float target_gradient = l[target] * k - grads->grad_scale;
#pragma omp simd
      for (int64_t j = 0; j < V; j++) l[j] = round_to_bf16(l[j] * k);
      l[target] = round_to_bf16(target_gradient);
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
  static thread_local std::vector<float> logits_buffer, dhidden_t_buffer;
  static thread_local std::vector<double> ce_buffer, z_buffer;
  static thread_local std::vector<bf16> grad16_buffer;
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
    // The own logits kernel's operands: W packed once per call, and each row's largest logit.
    static thread_local std::vector<bf16> packed_weight;
    static thread_local std::vector<float> row_max_buffer;
    if (own_kernels) {
      pack_narrow_weight(weight.f32, weight.b16, V, C, packed_weight);
      row_max_buffer.resize(size_t(chunk));
    }
    float* row_max = row_max_buffer.data();
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
        // logits = hidden · Wᵀ
        if (own_kernels)
          narrow_logits(hidden + n0 * C, rows, packed_weight.data(), V, C, logits, row_max);
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
          const float m = own_kernels ? row_max[r] : simd::max_of(l, V);
          const float k = softmax_row(l, m, V, target, z_coef, grads, &row_ce[n0 + r], &row_z[n0 + r]);
          if (!grads) continue;
          if (chunk16) {
            write_gradient_row(l, V, k, target, l[target] * k - grads->grad_scale, chunk16 + r * V);
          } else {
#pragma omp simd
            for (int64_t j = 0; j < V; j++) l[j] *= k;
            l[target] -= grads->grad_scale;
          }
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
