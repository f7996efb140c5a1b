// torchao's tensorwise float8 Linear (model/float8_linear.h) as three casts and the Backend's float8 GEMMs.
#include "replica/model/float8_linear.h"

namespace replica::model {

namespace {

constexpr Float8Format kE4m3 = Float8Format::e4m3, kE5m2 = Float8Format::e5m2;

// torchao's Float8LinearConfig(round_scales_to_power_of_2=True): activations and gradients get power-of-two scales;
// the weight's scale comes from the FSDP precompute, which does not round it.
constexpr bool kActivationScalePowerOfTwo = true, kWeightScalePowerOfTwo = false;

}  // namespace

void float8_linear_forward(Backend& be, const Float8Scratch& s, float* y, WeightRef x, const float* w, int64_t M,
                           int64_t N, int64_t K) {
  be.quantize_float8(s.a, s.scales, x, size_t(M * K), kE4m3, kActivationScalePowerOfTwo);
  be.quantize_float8(s.b, s.scales + 1, {w}, size_t(N * K), kE4m3, kWeightScalePowerOfTwo);
  be.gemm_float8(false, true, M, N, K, {s.a, kE4m3, s.scales}, K, {s.b, kE4m3, s.scales + 1}, K, y, N, false,
                 /*fast_accumulation=*/true);
}

void float8_linear_backward(Backend& be, const Float8Scratch& s, float* dx, float* dw, WeightRef dy, WeightRef x,
                            const float* w, int64_t M, int64_t N, int64_t K, bool accumulate_dx) {
  const Float8Matrix grad{s.a, kE5m2, s.scales};
  be.quantize_float8(s.a, s.scales, dy, size_t(M * N), kE5m2, kActivationScalePowerOfTwo);
  be.quantize_float8(s.b, s.scales + 1, {w}, size_t(N * K), kE4m3, kWeightScalePowerOfTwo);
  be.gemm_float8(false, false, M, K, N, grad, N, {s.b, kE4m3, s.scales + 1}, K, dx, K, accumulate_dx, false);
  be.quantize_float8(s.b, s.scales + 1, x, size_t(M * K), kE4m3, kActivationScalePowerOfTwo);
  be.gemm_float8(true, false, N, K, M, grad, N, {s.b, kE4m3, s.scales + 1}, K, dw, K, true, false);
}

}  // namespace replica::model
