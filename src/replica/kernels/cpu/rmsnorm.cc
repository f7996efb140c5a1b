// RMSNorm forward and backward.
#include "replica/kernels/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "replica/kernels/cpu/column_sum.h"

namespace replica::cpu {

// One row of rmsnorm_forward: yr = xr · rstd · w; returns rstd.
static float normalize_row(float* yr, const float* xr, const float* w, int64_t C, float eps) {
  double sum_sq = 0.0;
  for (int64_t c = 0; c < C; c++) sum_sq += double(xr[c]) * xr[c];
  float s = float(1.0 / std::sqrt(sum_sq / double(C) + double(eps)));
  for (int64_t c = 0; c < C; c++) yr[c] = xr[c] * s * w[c];
  return s;
}

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C, float eps) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) rstd[r] = normalize_row(y + r * C, x + r * C, w, C, eps);
}

void rmsnorm_add_forward(float* out, float* rstd, const float* residual, const float* x, const float* w, int64_t rows,
                         int64_t C, float eps) {
#pragma omp parallel
  {
    // The row goes through memory before the sum, so that the compiler cannot contract x·s·w + residual into an
    // FMA: the sum is rounded as add() rounds it (tests/unit/test_kernels.cc checks the bits).
    std::vector<float> y(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      rstd[r] = normalize_row(y.data(), x + r * C, w, C, eps);
      for (int64_t c = 0; c < C; c++) out[r * C + c] = residual[r * C + c] + y[size_t(c)];
    }
  }
}

void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t rows, int64_t C, bool accumulate) {
  // y = x·r·w with r = (mean(x²) + eps)^(-1/2):
  //   dx = r·(dy·w) − x · r³/C · Σ_c dy·w·x,     dw = Σ_rows dy·x·r
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    float* dxr = dx + r * C;
    double dot = 0.0;
    for (int64_t c = 0; c < C; c++) dot += double(dyr[c]) * w[c] * xr[c];
    float s = rstd[r];
    float k = float(dot * double(s) * s * s / double(C));
    for (int64_t c = 0; c < C; c++) {
      float g = s * dyr[c] * w[c] - xr[c] * k;
      dxr[c] = accumulate ? dxr[c] + g : g;
    }
  }
  column_sum(dw, rows, C, [&](int64_t r, int64_t c) { return dy[r * C + c] * x[r * C + c] * rstd[r]; });
}

}  // namespace replica::cpu
