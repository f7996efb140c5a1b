// Attention of a few new queries over a key/value cache on the GPU (decoding), same contract as
// kernels/cpu/cached_attention.h. D ≤ 256 and H a multiple of K (std::runtime_error otherwise).
#pragma once
#include "replica/kernels/attention.h"
#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// q, out: [n, H, D]; k, v: [n, K, D] (the new keys); k_cache, v_cache: [capacity, K, D]. One warp per (query,
// head) visits its keys in position order with an online softmax; each score is a fixed butterfly sum over d.
void cached_attention(Context& ctx, float* out, const float* q, const float* k, const float* v, const float* k_cache,
                      const float* v_cache, const CachedAttentionShape& s);

}  // namespace replica::cuda
