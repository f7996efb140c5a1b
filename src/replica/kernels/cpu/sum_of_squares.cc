// Blocked sums of squares: one block per work unit, summed in double in index order.
#include "replica/kernels/cpu/sum_of_squares.h"

#include <algorithm>
#include <cstdint>

namespace replica::cpu {

namespace {

// Σ x[i]² in double for i in [begin, end), in index order: one chain of dependent adds.
double chain(const float* x, size_t begin, size_t end) {
  double s = 0.0;
  for (size_t i = begin; i < end; i++) s += double(x[i]) * double(x[i]);
  return s;
}

}  // namespace

std::vector<double> block_sums_of_squares(const float* x, size_t n) {
  // A block's chain waits ~4 cycles per add, so kChains whole blocks are summed side by side, each still one chain in
  // index order: the same bits as a block at a time, ~3x faster (the clipping of the tiny model's 26.5 M gradients,
  // 2 % of its step; bench/RESULTS.md, issue 34).
  constexpr int64_t kChains = 8;
  const int64_t n_blocks = int64_t((n + kSquareSumBlock - 1) / kSquareSumBlock);
  const int64_t side_by_side = int64_t(n / kSquareSumBlock) / kChains;  // groups of kChains whole blocks
  const int64_t leftovers = n_blocks - side_by_side * kChains;          // summed one at a time
  std::vector<double> partial(size_t(n_blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < side_by_side + leftovers; g++) {
    if (g >= side_by_side) {  // the blocks after the groups, one at a time
      const size_t begin = size_t(side_by_side * kChains + (g - side_by_side)) * kSquareSumBlock;
      partial[begin / kSquareSumBlock] = chain(x, begin, std::min(n, begin + kSquareSumBlock));
      continue;
    }
    const float* block = x + size_t(g * kChains) * kSquareSumBlock;
    double s[kChains] = {};
    for (size_t i = 0; i < kSquareSumBlock; i++)
      for (int64_t c = 0; c < kChains; c++) {
        const double v = double(block[size_t(c) * kSquareSumBlock + i]);
        s[c] += v * v;
      }
    for (int64_t c = 0; c < kChains; c++) partial[size_t(g * kChains + c)] = s[c];
  }
  return partial;
}

}  // namespace replica::cpu
