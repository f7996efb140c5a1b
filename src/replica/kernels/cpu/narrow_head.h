// A narrow LM head's bf16 products on AVX512-BF16's dot products instead of oneDNN's matmul: the logits
// hidden · Wᵀ and the weight gradient dW += dlogitsᵀ · hidden, with oneDNN's bits (`NarrowHead.*`); the logits are
// finished in registers as stretches of the softmax.
//
// At C = 128 (the tiny model) the LM head is 94 % of the step. oneDNN 2.6 runs the logits at ~290 GFLOP/s of a
// 2048³ peak of ~420 and dW at ~340, short of what the dot products sustain (~400–460) for two reasons these kernels
// take out (bench/RESULTS.md, issue 34):
// - the logits, 205 M floats a step, went to memory and back for the softmax; each tile of them is now a stretch of
//   the softmax (stretch_softmax.h) whose largest logit, exps and sum are formed while it is in registers, so the
//   forward alone writes nothing per logit, and training writes the exps once, past the caches (a normal store first
//   reads each line it overwrites), for the gradient pass;
// - dW reads the logit gradients [rows, V] down their columns: a stripe of 32 vocabulary entries is 64 bytes of
//   each of hundreds of rows, hundreds of misses that no hardware prefetcher predicts, so the next stripe's lines
//   are prefetched while the current one is multiplied.
// W is packed into pairs along C ([V/16][C/2][16 vocabulary lanes][2]) once per rounding of the weights (lm_head_loss
// keeps the packing while WeightRef's generation stays; once per call where that is not known); each logit is one
// vdpbf16ps chain over C's pairs in order from zero, each dW entry one chain over the rows' pairs in order, added to
// dW at the end: the sums oneDNN's bf16 kernels form for these shapes (dW up to 512 rows, the K block oneDNN sums in
// one chain; lm_head_loss gives it no more).
#pragma once
#include <cstdint>
#include <vector>

#include "replica/core/bf16.h"
#include "replica/core/huge_pages.h"
#include "replica/kernels/cpu/stretch_softmax.h"

namespace replica::cpu {

// Whether this build runs these kernels (compiled for AVX512-BF16) for a head of C columns (a multiple of 8, at most
// 256).
bool narrow_head_available(int64_t C);

// W [V, C], bf16 (W16) or rounded here from fp32 (W32, when W16 is null), packed for narrow_logits: vocabulary rows
// in blocks of 16 (the last padded with zeros), each block's C/2 pairs of columns as 16 32-bit lanes.
void pack_narrow_weight(const float* W32, const bf16* W16, int64_t V, int64_t C, HugePageVector<bf16>& packed);

// The logits round_bf16(hidden [rows, C]) · Wᵀ, W as pack_narrow_weight packed it, finished by stretches of the
// softmax (stretch_softmax.h) as they are computed: each stretch's largest logit and sum of exps into row r of
// stretches ([r · count + s], count = stretches_of(V)), target_logit[r] the logit at targets[r] (left alone where that
// is outside [0, V)), and with exps, exps [rows, V] (row stride V) the stretches' exps (stretch_exps with keep),
// streamed past the caches where a row starts 64-byte aligned. The same bits as stretch_exps over oneDNN's bf16
// logits.
void narrow_logits(const float* hidden, int64_t rows, const bf16* packed, int64_t V, int64_t C, const int32_t* targets,
                   float* exps, StretchSums stretches, float* target_logit);

// dW [V, C] += dlogitsᵀ · round_bf16(hidden [rows, C]), dlogits [rows, V] in bf16 (row stride V; rows that start
// 64-byte aligned only read faster). oneDNN's bits up to 512 rows; beyond, still one chain per entry over all rows.
void narrow_dweight(const bf16* dlogits, int64_t rows, int64_t V, const float* hidden, int64_t C, float* dW);

}  // namespace replica::cpu
