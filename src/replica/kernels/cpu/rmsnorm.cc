// RMSNorm forward and backward.
#include "replica/kernels/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>

#include "replica/kernels/cpu/column_sum.h"

namespace replica::cpu {

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C, float eps) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    double sum_sq = 0.0;
    for (int64_t c = 0; c < C; c++) sum_sq += double(xr[c]) * xr[c];
    float s = float(1.0 / std::sqrt(sum_sq / double(C) + double(eps)));
    rstd[r] = s;
    for (int64_t c = 0; c < C; c++) yr[c] = xr[c] * s * w[c];
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
