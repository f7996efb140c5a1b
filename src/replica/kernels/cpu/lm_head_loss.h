// The LM head fused with fp32 cross-entropy and z-loss, processed in row chunks so that the full
// [tokens × vocab] logits never exist at once. Per labelled row with lse = logsumexp(logits):
//   ce = lse − logit[target],   z = lse²,   loss = (Σ ce + z_coef · Σ z) / n_labels (divided by the caller).
#pragma once
#include <cstdint>

#include "replica/kernels/lm_head_loss.h"
#include "replica/kernels/precision.h"

namespace replica::cpu {

// hidden [N, C] (after the final norm), weight [V, C], targets [N] (kIgnoreLabel = no label).
// With grads, also computes the backward pass in the same sweep.
LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* targets, int64_t N, int64_t C,
                      int64_t V, float z_coef, Precision precision, const LmHeadGrads* grads);

}  // namespace replica::cpu
