// A plain GEMM with kernels/cpu/gemm.h's contract, under the CPU LM head in the GPU checks: the GPU machine
// has no oneDNN, and a dot product in double over the (bf16-rounded) operands is the stricter reference.
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/cpu/gemm.h"

namespace replica::cpu {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate, Precision precision, const bf16* B16,
          const bf16* A16) {
  const bool bf = precision == Precision::bf16;
  auto a = [&](int64_t i, int64_t k) {
    const int64_t at = trans_a ? k * lda + i : i * lda + k;
    if (!bf) return A[at];
    return A16 ? to_float(A16[at]) : round_to_bf16(A[at]);
  };
  auto b = [&](int64_t k, int64_t j) {
    const int64_t at = trans_b ? j * ldb + k : k * ldb + j;
    if (!bf) return B[at];
    return B16 ? to_float(B16[at]) : round_to_bf16(B[at]);
  };
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double sum = 0.0;
      for (int64_t k = 0; k < K; k++) sum += double(a(i, k)) * double(b(k, j));
      C[i * ldc + j] = accumulate ? float(double(C[i * ldc + j]) + sum) : float(sum);
    }
}

// It rounds bf16 operands itself, as a bf16 matmul does, so the CPU LM head takes its per-product path here.
bool native_bf16_gemm() { return true; }

}  // namespace replica::cpu
