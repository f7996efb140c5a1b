// AdamW's element update on the CPU (the step's scalars: kernels/adamw.h; the optimizer: optim/adamw.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "replica/kernels/adamw.h"

namespace replica::cpu {

// For every i of every chunk, with j = i − shard_begin: params[j], exp_avg[j], exp_avg_sq[j] updated from grads[j]
// in OLMo-core's foreach order of fp32 operations (bitwise equal to torch's fp32 ops).
void adamw_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, size_t shard_begin,
                const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s);

}  // namespace replica::cpu
