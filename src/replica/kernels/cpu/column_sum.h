// Deterministic column sums of a per-row quantity: used by every weight gradient that is a sum over tokens
// (norm weights). Rows are cut into fixed blocks; each block is summed, then blocks are added in order.
#pragma once
#include <cstdint>
#include <vector>

namespace replica::cpu {

constexpr int64_t kRowBlock = 64;

// out[c] += sum_r value(r, c) for r in [0, rows), c in [0, C). value(r, c) is evaluated exactly once.
template <typename Value>
void column_sum(float* out, int64_t rows, int64_t C, Value value) {
  int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  std::vector<float> partial(size_t(blocks * C), 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; blk++) {
    float* p = partial.data() + blk * C;
    for (int64_t r = blk * kRowBlock; r < std::min(rows, (blk + 1) * kRowBlock); r++)
      for (int64_t c = 0; c < C; c++) p[c] += value(r, c);
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; c++) {
    float sum = 0.0f;
    for (int64_t blk = 0; blk < blocks; blk++) sum += partial[size_t(blk * C + c)];
    out[c] += sum;
  }
}

}  // namespace replica::cpu
