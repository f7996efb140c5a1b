// Causal self-attention with optional sliding window and GQA on the GPU, same contract as
// kernels/cpu/attention.h: query i sees keys max(0, i − W + 1) ≤ j ≤ i (W = window, 0 = full causal) of its own
// document (`docs`, device memory, or none: kernels/attention.h), query head h reads KV head h / (H / K), lse saved.
// Flash style: tiles of queries and keys in shared memory, an online softmax, and only the key tiles a query tile
// can see are visited (O(Σ_documents len · min(len, W))). Variants with the same arguments: fp32 on CUDA cores
// (the baseline) and bf16 operands on tensor cores (mma.sync, and wgmma).
#pragma once
#include <cstdint>

#include "replica/kernels/attention.h"
#include "replica/kernels/cuda/context.h"
#include "replica/kernels/precision.h"

namespace replica::cuda {

// q, out: [B, Tq, H, D]; k, v: [B, T, K, D]; lse: [B, H, Tq], Tq = s.rows_q() (a slice of the last queries,
// kernels/attention.h; every variant below takes one). D ≤ 256.
void attention_forward(Context& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s, const DocumentOffsets& docs);

// dq: [B, Tq, H, D]; dk, dv: [B, T, K, D] (overwritten). Deterministic without atomics: dK and dV are
// accumulated by one block per key tile and KV head (over the group's query heads in order, then query
// tiles in order), dQ by one block per query tile and head.
void attention_backward(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                        const float* lse, const float* q, const float* k, const float* v, const AttentionShape& s,
                        const DocumentOffsets& docs);

// The same on tensor cores through mma.sync with register-resident scores and probabilities (attention_mma.cu,
// FlashAttention-2 style), same arrays (fp32 in device memory) and the same lse (natural log of the scaled
// scores, scale = 1/√D). Inside, q, k, v, dout and the probabilities P and dS are rounded to bf16 (RNE); q, k and v
// are read as their caller's bf16 copies where given (WeightRef::b16: the model's QK-norm + RoPE pass writes them),
// else rounded into scratch per call. Every product accumulates in fp32, softmax statistics are fp32. D must be a
// multiple of 16 up to 128, or 192 or 256 (attention_mma_head_dim; std::invalid_argument otherwise); q, k, v (and
// their copies) and dout 16-byte aligned. Deterministic without atomics, split like attention_backward.
bool attention_mma_head_dim(int64_t D);  // whether the tensor-core kernels take head dim D
void attention_forward_mma(Context& ctx, float* out, float* lse, WeightRef q, WeightRef k, WeightRef v,
                           const AttentionShape& s, const DocumentOffsets& docs);
void attention_backward_mma(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                            const float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                            const DocumentOffsets& docs);

// The same on sm_90a warpgroup products (attention_wgmma.cu, FlashAttention-3's instruction): the same arguments,
// rounding points and outputs as the mma.sync pair, and interchangeable with it; head dims 64, 128 and 256 on an
// sm_90 GPU, and the mma.sync kernels for everything else.
void attention_forward_wgmma(Context& ctx, float* out, float* lse, WeightRef q, WeightRef k, WeightRef v,
                             const AttentionShape& s, const DocumentOffsets& docs);
// The backward on warpgroup products: the same contract as attention_backward_mma, in one pass of five products per
// tile pair (dQ's shares added in key order, so reruns give the same bits; not the mma.sync kernels' bits).
void attention_backward_wgmma(Context& ctx, float* dq, float* dk, float* dv, const float* dout, const float* out,
                              const float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                              const DocumentOffsets& docs);

// delta[b, h, t] = Σ_d dout·out in fp32 with a fixed reduction order: the row term both backward variants need.
void attention_delta(Context& ctx, float* delta, const float* dout, const float* out, const AttentionShape& s);

}  // namespace replica::cuda
