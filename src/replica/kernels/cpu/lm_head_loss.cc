// Chunked LM head + cross-entropy + z-loss, forward and backward in one sweep.
#include "replica/kernels/cpu/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace replica {

namespace {

constexpr int64_t kLanes = 16;  // partial sums per row: vectorisable and in a fixed order

float row_max(const float* x, int64_t n) {
  float lane[kLanes];
  std::fill(lane, lane + kLanes, -INFINITY);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; j++) lane[j] = std::max(lane[j], x[i + j]);
  float m = -INFINITY;
  for (; i < n; i++) m = std::max(m, x[i]);
  for (int64_t j = 0; j < kLanes; j++) m = std::max(m, lane[j]);
  return m;
}

// x[i] = exp(x[i] − shift); returns Σ x[i] accumulated in kLanes fp32 lanes, then in double.
double exp_and_sum(float* x, int64_t n, float shift) {
  float lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (int64_t j = 0; j < kLanes; j++) {
      x[i + j] = std::exp(x[i + j] - shift);
      lane[j] += x[i + j];
    }
  }
  double sum = 0.0;
  for (; i < n; i++) {
    x[i] = std::exp(x[i] - shift);
    sum += x[i];
  }
  for (int64_t j = 0; j < kLanes; j++) sum += lane[j];
  return sum;
}

}  // namespace

LossSums lm_head_loss(const float* hidden, const float* weight, const int32_t* targets, int64_t N, int64_t C,
                      int64_t V, float z_coef, Precision precision, const LmHeadGrads* grads) {
  // Up to 16M logits (64 MB) per chunk.
  const int64_t chunk = std::clamp<int64_t>((int64_t(1) << 24) / V, 1, N);
  std::vector<float> logits(size_t(chunk * V));
  std::vector<double> row_ce(size_t(N), 0.0), row_z(size_t(N), 0.0);

  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t rows = std::min(chunk, N - n0);
    linear_forward(logits.data(), hidden + n0 * C, weight, rows, V, C, precision);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      const int32_t target = targets[n0 + r];
      float* l = logits.data() + r * V;
      if (target == kIgnoreLabel) {
        if (grads) std::fill(l, l + V, 0.0f);
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
#pragma omp simd
      for (int64_t j = 0; j < V; j++) l[j] *= k;
      l[target] -= grads->grad_scale;
    }
    if (!grads) continue;
    linear_backward_input(grads->dhidden + n0 * C, logits.data(), weight, rows, V, C, false, precision);
    linear_backward_weight(grads->dweight, logits.data(), hidden + n0 * C, rows, V, C, precision);
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

}  // namespace replica
