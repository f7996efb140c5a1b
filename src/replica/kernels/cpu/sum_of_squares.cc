// Blocked sums of squares: one block per work unit, summed in double in index order.
#include "replica/kernels/cpu/sum_of_squares.h"

#include <algorithm>
#include <cstdint>

namespace replica::cpu {

std::vector<double> block_sums_of_squares(const float* x, size_t n) {
  const int64_t n_blocks = int64_t((n + kSquareSumBlock - 1) / kSquareSumBlock);
  std::vector<double> partial(size_t(n_blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n_blocks; b++) {
    size_t begin = size_t(b) * kSquareSumBlock, end = std::min(n, begin + kSquareSumBlock);
    double s = 0.0;
    for (size_t i = begin; i < end; i++) s += double(x[i]) * double(x[i]);
    partial[size_t(b)] = s;
  }
  return partial;
}

}  // namespace replica::cpu
