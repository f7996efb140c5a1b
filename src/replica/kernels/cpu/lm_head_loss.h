// The LM head fused with fp32 cross-entropy and z-loss, processed in row chunks so that the full
// [tokens × vocab] logits never exist at once. Per labelled row with lse = logsumexp(logits):
//   ce = lse − logit[target],   z = lse²,   loss = (Σ ce + z_coef · Σ z) / n_labels (divided by the caller).
#pragma once
#include <cstdint>

#include "replica/kernels/lm_head_loss.h"
#include "replica/kernels/precision.h"

namespace replica::cpu {

// How bf16 precision runs its GEMMs. per_product: gemm rounds (or takes the weight's bf16 copy) per product, for
// oneDNN's bf16 matmul; rounded_fp32: the operands rounded once per call, held in fp32, through the fp32 matmul (the
// loss and dhidden of per_product on a CPU without a bf16 matmul, bit for bit; dW in another sum order);
// narrow_head: a narrow head's logits and dW on replica's own AVX512-BF16 kernels (narrow_head.h; per_product's bits,
// dW's too up to 512 rows per call), per_product where they do not apply (a head wider than 256 or not a multiple of
// 8, fewer than 128 rows, a CPU without them). automatic takes narrow_head where oneDNN has a bf16 matmul and
// rounded_fp32 where it has none (gemm.h); tests force any on any CPU.
enum class LmHeadBf16Path { automatic, per_product, rounded_fp32, narrow_head };

// hidden [N, C] (after the final norm), weight [V, C], targets [N] (kIgnoreLabel = no label).
// With grads, also computes the backward pass in the same sweep.
LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* targets, int64_t N, int64_t C, int64_t V,
                      float z_coef, Precision precision, const LmHeadGrads* grads,
                      LmHeadBf16Path bf16_path = LmHeadBf16Path::automatic);

}  // namespace replica::cpu
