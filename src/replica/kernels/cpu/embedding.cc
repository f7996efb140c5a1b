// Embedding forward and backward.
#include "replica/kernels/cpu/embedding.h"

#include <algorithm>
#include <cstring>

namespace replica::cpu {

void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; n++) std::memcpy(out + n * C, table + int64_t(ids[n]) * C, size_t(C) * sizeof(float));
}

void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C) {
  constexpr int64_t kCols = 64;
#pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; c0 < C; c0 += kCols) {
    int64_t c1 = std::min(C, c0 + kCols);
    for (int64_t n = 0; n < N; n++) {
      float* row = dtable + int64_t(ids[n]) * C;
      const float* g = dout + n * C;
      for (int64_t c = c0; c < c1; c++) row[c] += g[c];
    }
  }
}

}  // namespace replica::cpu
