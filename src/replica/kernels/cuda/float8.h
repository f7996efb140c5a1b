// float8 linears on the GPU (train.float8): torchao's tensorwise cast with its amax reduction, and the float8 GEMM
// through cuBLASLt. Same contracts as kernels/cpu/float8.h; all pointers are device pointers.
#pragma once
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/cuda/context.h"
#include "replica/kernels/float8.h"

namespace replica::cuda {

// amax over x (x16 when given) in a fixed order, the scale and its inverse computed on the device (no host round
// trip), then the codes.
void quantize_float8(Context& ctx, uint8_t* codes, float* inverse_scale, const float* x, const bf16* x16, int64_t n,
                     Float8Format format, bool power_of_two_scale);

// cuBLASLt's float8 GEMM with the operands' inverse scales as its scale pointers, fp32 output; fast_accumulation sets
// CUBLASLT_MATMUL_DESC_FAST_ACCUM. cuBLASLt takes float8 only as C = A[M,K]·B[N,K]ᵀ with K-contiguous operands whose
// leading dimensions are multiples of 16, so other layouts are first copied K-major into scratch, K padded with zero
// codes to a multiple of 16 (torchao too writes transposed copies for the backward's products).
void gemm_float8(Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const Float8Matrix& A,
                 int64_t lda, const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool accumulate,
                 bool fast_accumulation);

}  // namespace replica::cuda
