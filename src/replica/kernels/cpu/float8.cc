// The float8 cast and product on the CPU: amax in one pass, the cast elementwise, the product through cpu::gemm.
#include "replica/kernels/cpu/float8.h"

#include <cmath>
#include <mutex>
#include <vector>

#include "replica/kernels/cpu/gemm.h"

namespace replica::cpu {

namespace {

// Elements spanned by a row-major [rows, cols] operand with row stride ld.
size_t span(int64_t rows, int64_t cols, int64_t ld) {
  return rows == 0 || cols == 0 ? 0 : size_t((rows - 1) * ld + cols);
}

// The float operands and the product of one gemm_float8 call, kept between calls (one call at a time).
struct Scratch {
  std::mutex mutex;
  std::vector<float> a, b, product;
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

const float* decoded(const Float8Matrix& m, size_t n, std::vector<float>& out) {
  if (out.size() < n) out.resize(n);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = from_float8(m.codes[i], m.format);
  return out.data();
}

}  // namespace

void quantize_float8(uint8_t* codes, float* inverse_scale, const float* x, const bf16* x16, size_t n,
                     Float8Format format, bool power_of_two_scale) {
  auto value = [&](size_t i) { return x16 ? to_float(x16[i]) : x[i]; };
  float amax = 0.0f;
  for (size_t i = 0; i < n && !std::isnan(amax); i++) {
    const float a = std::fabs(value(i));
    if (a > amax || std::isnan(a)) amax = a;
  }
  const float scale = float8_scale(amax, format, power_of_two_scale);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) codes[i] = to_float8(value(i) * scale, format);
  *inverse_scale = 1.0f / scale;
}

void gemm_float8(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const Float8Matrix& A, int64_t lda,
                 const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (M == 0 || N == 0) return;
  Scratch& s = scratch();
  std::lock_guard<std::mutex> lock(s.mutex);
  const float* a = decoded(A, trans_a ? span(K, M, lda) : span(M, K, lda), s.a);
  const float* b = decoded(B, trans_b ? span(N, K, ldb) : span(K, N, ldb), s.b);
  if (s.product.size() < size_t(M * N)) s.product.resize(size_t(M * N));
  gemm(trans_a, trans_b, M, N, K, a, lda, b, ldb, s.product.data(), N, false, Precision::fp32);
  const float scale = *A.inverse_scale * *B.inverse_scale;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      const float product = scale * s.product[size_t(i * N + j)];
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + product : product;
    }
}

}  // namespace replica::cpu
