// Deterministic global gradient norm (blocked double sums, combined in block order) and clipping.
#include "replica/optim/clip.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "replica/kernels/cpu/sum_of_squares.h"

namespace replica::optim {

double clip_coefficient(double norm, double max_norm) {
  return max_norm > 0 ? std::min(1.0, max_norm / (norm + 1e-6)) : 1.0;
}

double sum_of_squares(const float* x, size_t n) {
  double total = 0.0;
  for (double s : cpu::block_sums_of_squares(x, n)) total += s;
  return total;
}

double global_norm(const float* grads, size_t n) { return std::sqrt(sum_of_squares(grads, n)); }

double clip_grad_norm(float* grads, size_t n, double max_norm) {
  const double norm = global_norm(grads, n);
  const double coef = clip_coefficient(norm, max_norm);
  if (coef < 1.0) {  // multiplying by exactly 1 (what torch does otherwise) changes nothing
    const float scale = float(coef);
    const int64_t count = int64_t(n);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; i++) grads[i] *= scale;
  }
  return norm;
}

}  // namespace replica::optim
