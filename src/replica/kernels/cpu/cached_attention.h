// Attention of a few new queries over a key/value cache, the decoding step of generation (kernels/attention.h,
// CachedAttentionShape, says which keys each query sees and where they are). Forward only: nothing is trained here.
// Query head h reads key/value head h / (H / K); scores are q·k / √D, softmax in fp32.
#pragma once
#include "replica/kernels/attention.h"

namespace replica::cpu {

// q, out: [n, H, D]; k, v: [n, K, D], the new keys and values (positions p … p + n − 1); k_cache, v_cache:
// [capacity, K, D]. out (=) for each query and head is an online softmax over its keys in increasing position,
// each score a sum over d in order: a fixed order, whatever the thread count.
void cached_attention(float* out, const float* q, const float* k, const float* v, const float* k_cache,
                      const float* v_cache, const CachedAttentionShape& s);

}  // namespace replica::cpu
