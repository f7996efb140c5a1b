// AdamW on the CPU: the step's scalars and the element update (optim/adamw.h holds the optimizer).
#pragma once
#include <cstddef>
#include <cstdint>

#include "replica/kernels/types.h"

namespace replica {

// The step's scalars as torch computes them from Python floats and fp32 0-d tensors (fp32 pow and sqrt):
//   decay = 1 − lr·wd;  w1 = 1 − β1, w2 = 1 − β2;  bc1 = 1 − β1^t, bc2 = 1 − β2^t;
//   step size = lr / bc1 (torch: reciprocal(bc1) · lr);  the denominator's divisor sqrt(bc2).
AdamWScalars adamw_scalars(double beta1, double beta2, double eps, double weight_decay, int64_t step_count,
                           double lr);

// For every i of every chunk, with j = i − shard_begin: params[j], exp_avg[j], exp_avg_sq[j] updated from grads[j]
// in OLMo-core's foreach order of fp32 operations (bitwise equal to torch's fp32 ops).
void adamw_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, size_t shard_begin,
                const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s);

}  // namespace replica
