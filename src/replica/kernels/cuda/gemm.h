// Matrix multiply on the GPU through cuBLASLt, with the CPU gemm's contract (kernels/cpu/gemm.h): row-major,
// optional transposes, fp32 output, C = op(A)·op(B) (+ C). In bf16 precision both operands are rounded to
// bf16 (round to nearest even, as on the CPU) and products accumulate in fp32; fp32 precision is true fp32
// (no TF32). All pointers are device pointers.
#pragma once
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/cuda/context.h"
#include "replica/kernels/precision.h"

namespace replica::cuda {

// dst[i] = bf16(src[i]), round to nearest even.
void convert_to_bf16(Context& ctx, const float* src, bf16* dst, int64_t n);

// Same arguments as cpu::gemm. In bf16, each operand is rounded into scratch on every call unless its
// rounded copy (same layout) is given: B16 for weights rounded once per step, A16 (and B16) for activations
// the model rounds once and uses in several products.
void gemm(Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate, Precision precision,
          const bf16* B16 = nullptr, const bf16* A16 = nullptr);

// The bf16 core: operands already bf16, fp32 accumulation and output.
void gemm_bf16(Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda,
               const bf16* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

}  // namespace replica::cuda
