// Causal self-attention with optional sliding window and GQA, tiled with an online softmax (flash style):
// memory is O(T) per head and work O(T · min(T, W)); no T×T matrix is ever formed.
// Query i attends keys j with max(0, i − W + 1) ≤ j ≤ i (W = window; 0 means full causal attention) and, with
// documents (kernels/types.h), s_i ≤ j, s_i the start of i's document; query head h reads key/value head h / (H / K).
// Only key tiles a query tile sees are visited, so packed rows cost O(Σ_documents min(len, W) · len).
#pragma once
#include <cstdint>

#include "replica/kernels/types.h"

namespace replica::cpu {

// q, out: [B, T, H, D]; k, v: [B, T, K, D]; lse: [B, H, T] (log-sum-exp of the scaled scores, saved).
// `docs`: host memory here; valid offsets (model/documents.h checks them), or none.
void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s, const DocumentOffsets& docs);

// dq: [B, T, H, D]; dk, dv: [B, T, K, D] (overwritten). Recomputes the probabilities tile by tile from lse.
// Each (b, h) accumulates its own dk/dv; heads that share a KV head are summed in head order afterwards.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                        const float* q, const float* k, const float* v, const AttentionShape& s,
                        const DocumentOffsets& docs);

}  // namespace replica::cpu
