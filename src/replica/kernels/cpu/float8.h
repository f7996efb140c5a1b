// float8 linears on the CPU (train.float8): torchao's dynamic tensorwise cast and torch._scaled_mm's product, with
// the GEMM itself in fp32 over the codes' exact values (a product of two float8 values is exact in fp32).
#pragma once
#include <cstddef>
#include <cstdint>

#include "replica/core/bf16.h"
#include "replica/kernels/float8.h"

namespace replica::cpu {

// amax = max |x| over x's n values (x16's when given: the bf16 copy of bf16 precision; NaN if any value is NaN, as
// torch.max), scale = float8_scale(amax, format, power_of_two_scale), codes[i] = to_float8(x[i] · scale) and
// *inverse_scale = 1 / scale in float32 (torchao's Float8Tensor passes _scale.reciprocal() to _scaled_mm).
void quantize_float8(uint8_t* codes, float* inverse_scale, const float* x, const bf16* x16, size_t n,
                     Float8Format format, bool power_of_two_scale);

// C[M,N] = s · op(A)·op(B) (+ C if accumulate) with s = A's inverse scale · B's (in float32), the operands' codes
// laid out as cpu::gemm's (trans_a: A stored [K,M]; trans_b: B stored [N,K]). Each element is cpu::gemm's fp32 sum
// of the codes' exact products, then multiplied by s, as cuBLASLt applies its scale pointers to the accumulator.
void gemm_float8(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const Float8Matrix& A, int64_t lda,
                 const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

}  // namespace replica::cpu
