// Causal self-attention with optional sliding window and GQA on the GPU, same contract as
// kernels/cpu/attention.h: query i sees keys max(0, i − W + 1) ≤ j ≤ i (W = window, 0 = full causal), query
// head h reads KV head h / (H / K), lse saved. fp32, flash style: tiles of queries and keys in shared
// memory, an online softmax, and only the key tiles a query tile can see are visited (O(T · min(T, W))).
#pragma once
#include <cstdint>

#include "replica/kernels/types.h"
#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// q, out: [B, T, H, D]; k, v: [B, T, K, D]; lse: [B, H, T]. D ≤ 256.
void attention_forward(Context& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s);

// dq: [B, T, H, D]; dk, dv: [B, T, K, D] (overwritten). Deterministic without atomics: dK and dV are
// accumulated by one block per key tile and KV head (over the group's query heads in order, then query
// tiles in order), dQ by one block per query tile and head.
void attention_backward(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                        const float* lse, const float* q, const float* k, const float* v, const AttentionShape& s);

}  // namespace replica::cuda
