// AdamW over the flat fp32 parameter buffer on the GPU, with optim/adamw.cc's math in the same order of
// fp32 operations and no fused multiply-adds, so a GPU step equals the CPU step bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// A fixed work unit: elements [begin, end) of the flat buffer, inside one tensor; decay is false for the
// embedding. Built once from the ParamTable by the caller (as AdamW's constructor builds its chunks).
struct AdamWChunk {
  size_t begin, end;
  int decay;
};

// Splits [begin, end) into chunks of at most 2^15 floats (the CPU optimizer's work unit).
void append_adamw_chunks(std::vector<AdamWChunk>& chunks, size_t begin, size_t end, bool decay);

// The step's scalars, computed on the host exactly as AdamW::step computes them (fp32 pow, sqrt, ...).
struct AdamWScalars {
  float decay, w1, keep1, w2, keep2, neg_step_size, bc2_sqrt, eps;
};
AdamWScalars adamw_scalars(double beta1, double beta2, double eps, double weight_decay, int64_t step_count,
                           double lr);

// One update of params[i], exp_avg[i − moments_begin], exp_avg_sq[i − moments_begin] for every i in the
// chunks (a device array of n_chunks). params, grads: full flat buffers; the moments cover a shard that
// starts at moments_begin (0 for the whole buffer).
void adamw_step(Context& ctx, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                size_t moments_begin, const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s);

}  // namespace replica::cuda
