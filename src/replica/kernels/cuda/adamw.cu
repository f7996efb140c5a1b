// AdamW step: one block per chunk. The _rn intrinsics round every product, quotient and sum to fp32
// separately (nvcc would otherwise contract a·b + c into an FMA), reproducing the CPU's order exactly.
#include "replica/kernels/cuda/adamw.h"
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

namespace {

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t shard_begin,
                             const AdamWChunk* chunks, AdamWScalars s) {
  const AdamWChunk chunk = chunks[blockIdx.x];
  const float p_scale = chunk.decay ? s.decay : 1.0f;
  for (size_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const size_t j = i - shard_begin;
    const float g = grads[j];
    const float p = __fmul_rn(params[j], p_scale);
    const float mi = __fadd_rn(__fmul_rn(m[j], s.keep1), __fmul_rn(g, s.w1));
    const float vi = __fadd_rn(__fmul_rn(v[j], s.keep2), __fmul_rn(__fmul_rn(g, g), s.w2));
    m[j] = mi;
    v[j] = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), s.bc2_sqrt), s.eps);
    params[j] = __fadd_rn(p, __fmul_rn(__fdiv_rn(mi, denom), s.neg_step_size));
  }
}

}  // namespace

void adamw_step(Context& ctx, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                size_t shard_begin, const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s) {
  if (n_chunks == 0) return;
  launch("adamw_step", adamw_kernel, unsigned(n_chunks), 256, 0, ctx.stream(), params, grads, exp_avg, exp_avg_sq,
         shard_begin, chunks, s);
}

}  // namespace replica::cuda
