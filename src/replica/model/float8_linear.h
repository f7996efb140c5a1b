// A Linear layer in float8 as OLMo 3 stage 3 ran it (train.float8): torchao's Float8Linear with the tensorwise recipe
// (stage3.md §5), over the Backend's cast and float8 GEMM. Forward and backward side by side.
//
//   forward:  y  = (s_x⁻¹ s_w⁻¹) · e4m3(x · s_x) · e4m3(w · s_w)ᵀ            fast accumulation allowed
//   backward: dx = (s_g⁻¹ s_w⁻¹) · e5m2(dy · s_g) · e4m3(w · s_w)
//             dw += (s_g⁻¹ s_x⁻¹) · e5m2(dy · s_g)ᵀ · e4m3(x · s_x)         fp32 accumulation
// with s = finfo.max / amax per tensor (float8_scale): s_x and s_g dynamic over the local tensor and rounded down to a
// power of two (round_scales_to_power_of_2), s_w over the whole weight, not rounded (OLMo-core's
// precompute_float8_dynamic_scale_for_fsdp). torchao's backward casts dy twice and x and w again, each time with
// the scale of the whole tensor (tensorwise), so each is one cast here: the same codes.
#pragma once
#include <cstdint>

#include "replica/kernels/backend.h"

namespace replica::model {

// Backend memory for one float8 Linear at a time: two operands' codes and their two inverse scales.
struct Float8Scratch {
  uint8_t* a;     // the activation operand (x, or dy): M·max(K, N) codes
  uint8_t* b;     // the weight (N·K codes), then x in the weight gradient's product
  float* scales;  // [2]: a's and b's inverse scales
};

// Whether torchao converts a Linear of these dimensions (OLMo-core's filter: both divisible by 16).
inline bool float8_eligible(int64_t out_features, int64_t in_features) {
  return out_features % 16 == 0 && in_features % 16 == 0;
}

// y [M, N] = x [M, K] · wᵀ (w [N, K], the fp32 master weight). In bf16 precision x.b16 holds x as the model rounded it
// (OLMo-core's activations are bf16), and that is what is cast.
void float8_linear_forward(Backend& be, const Float8Scratch& s, float* y, WeightRef x, const float* w, int64_t M,
                           int64_t N, int64_t K);

// dx [M, K] = (or +=, accumulate_dx) dy [M, N] · w, then dw [N, K] += dyᵀ · x.
void float8_linear_backward(Backend& be, const Float8Scratch& s, float* dx, float* dw, WeightRef dy, WeightRef x,
                            const float* w, int64_t M, int64_t N, int64_t K, bool accumulate_dx);

}  // namespace replica::model
