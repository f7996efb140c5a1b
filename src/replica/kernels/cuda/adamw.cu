// AdamW step: one block per chunk. The _rn intrinsics round every product, quotient and sum to fp32
// separately (nvcc would otherwise contract a·b + c into an FMA), reproducing the CPU's order exactly.
#include <algorithm>
#include <cmath>

#include "replica/kernels/cuda/adamw.h"
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

namespace {

constexpr size_t kChunk = size_t(1) << 15;  // floats per work unit, as in optim/adamw.cc

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t moments_begin,
                             const AdamWChunk* chunks, AdamWScalars s) {
  const AdamWChunk chunk = chunks[blockIdx.x];
  const float p_scale = chunk.decay ? s.decay : 1.0f;
  for (size_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const float g = grads[i];
    const float p = __fmul_rn(params[i], p_scale);
    const size_t j = i - moments_begin;
    const float mi = __fadd_rn(__fmul_rn(m[j], s.keep1), __fmul_rn(g, s.w1));
    const float vi = __fadd_rn(__fmul_rn(v[j], s.keep2), __fmul_rn(__fmul_rn(g, g), s.w2));
    m[j] = mi;
    v[j] = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), s.bc2_sqrt), s.eps);
    params[i] = __fadd_rn(p, __fmul_rn(__fdiv_rn(mi, denom), s.neg_step_size));
  }
}

}  // namespace

void append_adamw_chunks(std::vector<AdamWChunk>& chunks, size_t begin, size_t end, bool decay) {
  for (size_t b = begin; b < end; b += kChunk) chunks.push_back({b, std::min(b + kChunk, end), decay ? 1 : 0});
}

AdamWScalars adamw_scalars(double beta1, double beta2, double eps, double weight_decay, int64_t step_count,
                           double lr) {
  AdamWScalars s;
  s.decay = 1.0f - float(lr * weight_decay);
  s.w1 = float(1 - beta1);
  s.keep1 = 1.0f - s.w1;
  s.w2 = float(1 - beta2);
  s.keep2 = 1.0f - s.w2;
  const float t = float(step_count);
  const float bc1 = 1.0f - std::pow(float(beta1), t);
  const float bc2 = 1.0f - std::pow(float(beta2), t);
  s.neg_step_size = -((1.0f / bc1) * float(lr));
  s.bc2_sqrt = std::sqrt(bc2);
  s.eps = float(eps);
  return s;
}

void adamw_step(Context& ctx, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                size_t moments_begin, const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s) {
  if (n_chunks == 0) return;
  adamw_kernel<<<unsigned(n_chunks), 256, 0, ctx.stream()>>>(params, grads, exp_avg, exp_avg_sq, moments_begin,
                                                             chunks, s);
  check_launch("adamw_step");
}

}  // namespace replica::cuda
