// Chunked LM head + cross-entropy + z-loss, forward and backward in one sweep.
#include "replica/kernels/cpu/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/simd.h"

namespace replica::cpu {

namespace {

float row_max(const float* x, int64_t n) {
  simd::f16v lanes = simd::splat(-INFINITY);
  int64_t i = 0;
  for (; i + simd::kWidth <= n; i += simd::kWidth) lanes = simd::max(lanes, simd::load(x + i));
  float m = simd::max(lanes);
  for (; i < n; i++) m = std::max(m, x[i]);
  return m;
}

// x[i] = exp(x[i] − shift); returns Σ x[i] accumulated in 16 fp32 lanes, then in double (a fixed order).
double exp_and_sum(float* x, int64_t n, float shift) {
  simd::f16v lanes = {};
  int64_t i = 0;
  for (; i + simd::kWidth <= n; i += simd::kWidth) {
    const simd::f16v e = simd::exp(simd::load(x + i) - shift);
    simd::store(x + i, e);
    lanes += e;
  }
  double sum = 0.0;
  for (; i < n; i++) {
    x[i] = simd::exp(simd::splat(x[i] - shift))[0];
    sum += x[i];
  }
  for (int j = 0; j < simd::kWidth; j++) sum += lanes[j];
  return sum;
}

}  // namespace

LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* targets, int64_t N, int64_t C,
                      int64_t V, float z_coef, Precision precision, const LmHeadGrads* grads) {
  // Up to 16M logits (64 MB) per chunk.
  const int64_t chunk = std::clamp<int64_t>((int64_t(1) << 24) / V, 1, N);
  // In bf16 the logit gradients are written rounded, straight into the backward GEMMs' operand, and gathered over a
  // group of up to 64M (128 MB, four chunks) so that the backward GEMMs run once per group: dW's sum over rows then
  // reads and writes the [V, C] accumulator once per group instead of once per chunk, and the GEMMs reduce over
  // more rows per call (bench/RESULTS.md, issue 34). In fp32 the backward runs per chunk on the fp32 gradients.
  const bool write_bf16 = grads && precision == Precision::bf16;
  const int64_t group =
      write_bf16 ? std::clamp<int64_t>((int64_t(1) << 26) / V / chunk * chunk, chunk, N) : chunk;
  // Kept between calls: the chunk is tens of MB and page-faulting it in every step costs more than a GEMM.
  // (Thread-local to the caller; OpenMP workers below use the plain pointers.)
  static thread_local std::vector<float> logits_buffer, dhidden_t_buffer;
  static thread_local std::vector<double> ce_buffer, z_buffer;
  static thread_local std::vector<bf16> grad16_buffer;
  logits_buffer.resize(size_t(chunk * V));
  if (write_bf16) {
    grad16_buffer.resize(size_t(group * V));
    dhidden_t_buffer.resize(size_t(C * group));
  }
  bf16* grad16 = write_bf16 ? grad16_buffer.data() : nullptr;
  ce_buffer.assign(size_t(N), 0.0);
  z_buffer.assign(size_t(N), 0.0);
  float* logits = logits_buffer.data();
  double* row_ce = ce_buffer.data();
  double* row_z = z_buffer.data();

  for (int64_t g0 = 0; g0 < N; g0 += group) {
    const int64_t group_rows = std::min(group, N - g0);
    for (int64_t n0 = g0; n0 < g0 + group_rows; n0 += chunk) {
      const int64_t rows = std::min(chunk, g0 + group_rows - n0);
      bf16* chunk16 = grad16 ? grad16 + (n0 - g0) * V : nullptr;
      // logits = hidden · Wᵀ
      gemm(false, true, rows, V, C, hidden + n0 * C, C, weight.f32, C, logits, V, false, precision, weight.b16);
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; r++) {
        const int32_t target = targets[n0 + r];
        float* l = logits + r * V;
        if (target == kIgnoreLabel) {
          if (chunk16) std::fill(chunk16 + r * V, chunk16 + (r + 1) * V, bf16{0});
          else if (grads) std::fill(l, l + V, 0.0f);
          continue;
        }
        const float target_logit = l[target];
        const float m = row_max(l, V);
        const double sum = exp_and_sum(l, V, m);  // l now holds exp(logit − m)
        const double lse = double(m) + std::log(sum);
        row_ce[size_t(n0 + r)] = lse - double(target_logit);
        row_z[size_t(n0 + r)] = lse * lse;
        if (!grads) continue;
        // d/dlogit_j of (ce + z_coef·lse²) = p_j · (1 + 2·z_coef·lse) − [j = target]
        const float k = float((1.0 + 2.0 * z_coef * lse) / sum) * grads->grad_scale;
        if (chunk16) {
          bf16* g = chunk16 + r * V;
#pragma omp simd
          for (int64_t j = 0; j < V; j++) g[j] = to_bf16(l[j] * k);
          g[target] = to_bf16(l[target] * k - grads->grad_scale);
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
    // The group's backward from the bf16 dlogits: dhiddenᵀ = Wᵀ · dlogitsᵀ (oneDNN runs this form faster than
    // dlogits · W), transposed into dhidden; dW += dlogitsᵀ · hidden.
    float* dhidden_t = dhidden_t_buffer.data();
    gemm(true, true, C, group_rows, V, weight.f32, C, logits, V, dhidden_t, group_rows, false, precision, grad16,
         weight.b16);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < group_rows; r++)
      for (int64_t c = 0; c < C; c++) grads->dhidden[(g0 + r) * C + c] = dhidden_t[c * group_rows + r];
    gemm(true, false, V, C, group_rows, logits, V, hidden + g0 * C, C, grads->dweight, C, true, precision, nullptr,
         grad16);
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
