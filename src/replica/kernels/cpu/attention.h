// Causal self-attention with optional sliding window and GQA, tiled with an online softmax (flash style):
// memory is O(T) per head and work O(T · min(T, W)); no T×T matrix is ever formed.
// Query i attends keys j with max(0, i − W + 1) ≤ j ≤ i (W = window; 0 means full causal attention) and, with
// documents (kernels/attention.h), s_i ≤ j, s_i the start of i's document; query head h reads key/value head
// h / (H / K).
// Only key tiles a query tile sees are visited, so packed rows cost O(Σ_documents min(len, W) · len).
#pragma once
#include <cstdint>

#include "replica/kernels/attention.h"

namespace replica::cpu {

// q, out: [B, Tq, H, D]; k, v: [B, T, K, D]; lse: [B, H, Tq] (log-sum-exp of the scaled scores, saved), with
// Tq = s.rows_q() the last queries of each row (kernels/attention.h). Query tiles start at the first query, so a slice
// whose offset is a multiple of 64 visits the same tiles in the same order as the whole row: the same bits per query.
// `docs`: host memory here; valid offsets (model/document_offsets.h checks them), or none.
void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s, const DocumentOffsets& docs);

// dq: [B, Tq, H, D]; dk, dv: [B, T, K, D] (overwritten; keys no query sees get zeros). Recomputes the
// probabilities tile by tile from lse.
// Each (b, h) accumulates its own dk/dv; heads that share a KV head are summed in head order afterwards.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                        const float* q, const float* k, const float* v, const AttentionShape& s,
                        const DocumentOffsets& docs);

// The same contracts with bf16 products (attention_bf16.cc), the CPU's kernel in bf16 precision: q, k, v, the
// probabilities P, dout and dS are rounded to bf16 where they enter a product; products accumulate in fp32, and the
// softmax, lse, delta and all outputs stay fp32 (as autocast's scaled_dot_product_attention). D must be a multiple of
// 16. Same tiles, visiting order and determinism as the fp32 kernel (the bits do not depend on the thread count).
void attention_forward_bf16(float* out, float* lse, const float* q, const float* k, const float* v,
                            const AttentionShape& s, const DocumentOffsets& docs);
void attention_backward_bf16(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                             const float* q, const float* k, const float* v, const AttentionShape& s,
                             const DocumentOffsets& docs);
// How this build computes the bf16 kernel's products: "AVX512-BF16" (vdpbf16ps), or the same products as fp32 FMAs
// where the compiler's target lacks AVX512-BF16: "fp32 emulation, AVX2" or "fp32 emulation" (the same bits).
const char* attention_bf16_products();

}  // namespace replica::cpu
