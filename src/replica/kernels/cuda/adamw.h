// AdamW over the flat fp32 parameter buffer on the GPU, with kernels/cpu/adamw.cc's math in the same order
// of fp32 operations and no fused multiply-adds, so a GPU step equals the CPU step bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>

#include "replica/kernels/cuda/context.h"
#include "replica/kernels/types.h"

namespace replica::cuda {

// One update of params[j], exp_avg[j], exp_avg_sq[j] from grads[j], j = i − shard_begin, for every i in the
// chunks (a device array of n_chunks, built by optim/adamw.cc); s from replica::adamw_scalars.
void adamw_step(Context& ctx, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                size_t shard_begin, const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s);

}  // namespace replica::cuda
