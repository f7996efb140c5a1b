// Matrix multiply for Linear layers and the LM head, through oneDNN. Row-major everywhere.
// `bf16` precision rounds both operands to bfloat16 and accumulates in fp32 (as autocast does);
// outputs are always fp32.
#pragma once
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/precision.h"

namespace replica::cpu {

// C[M,N] = A[M,K] · op(B) (+ C if accumulate), where op(B) = B^T for B stored [N,K] (trans_b) or B for
// B stored [K,N]. A may be transposed too: trans_a means A is stored [K,M].
// lda/ldb/ldc are row strides in elements.
// In bf16 precision, B16 and A16 (optional) are B and A already rounded to bf16 with the same layout, so
// that weights are converted once per step and large operands that a kernel produces (the LM head's logit
// gradients) are written in bf16 directly instead of being converted per product.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate, Precision precision, const bf16* B16 = nullptr,
          const bf16* A16 = nullptr);

// Whether oneDNN has a bf16 matmul for this CPU (AVX-512); without one, bf16 precision runs the fp32 matmul on the
// rounded operands (gemm.cc), at the fp32 matmul's speed.
bool native_bf16_gemm();

// This machine's practical GEMM peak in FLOP/s for `precision`: the best of ten 2048³ matmuls.
// MFU everywhere is measured against it.
double measure_gemm_peak(Precision precision);

}  // namespace replica::cpu
