// The LM head fused with fp32 cross-entropy and z-loss on the GPU, same contract as
// kernels/cpu/lm_head_loss.h: row chunks of logits (at most 64M floats) so full [N, V] logits never exist;
// per labelled row ce = lse − logit[target], z = lse²; with grads the backward pass runs in the same sweep.
#pragma once
#include <cstdint>

#include "replica/kernels/cuda/context.h"
#include "replica/kernels/lm_head_loss.h"
#include "replica/kernels/precision.h"

namespace replica::cuda {

// hidden [N, C], weight [V, C], targets [N] and grads' buffers on the device. Returns the sums on the host
// (waits for the stream): per-row values are added in row order in double, as the CPU does.
LossSums lm_head_loss(Context& ctx, const float* hidden, WeightRef weight, const int32_t* targets, int64_t N,
                      int64_t C, int64_t V, float z_coef, Precision precision, const LmHeadGrads* grads);

}  // namespace replica::cuda
