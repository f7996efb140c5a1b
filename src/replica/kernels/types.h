// Device-neutral types of the kernel layer, shared by the CPU kernels (kernels/cpu), the CUDA kernels
// (kernels/cuda) and the code above them (kernels/backend.h). The types need nothing linked, so the CUDA library
// and the standalone GPU checks (tests/gpu) use them without libreplica; the name functions are in types.cc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "replica/core/bf16.h"
#include "replica/kernels/float8.h"

namespace replica {

// GEMM precision: bf16 rounds both operands to bfloat16 and accumulates in fp32 (as autocast does);
// outputs are always fp32.
enum class Precision { fp32, bf16 };

const char* precision_name(Precision p);
Precision parse_precision(const char* text);  // "fp32" | "bf16", else replica::Error

// Which kernel runs attention (the recipe's train.attention): fp32 on CUDA cores or the CPU, or, in bf16 precision,
// tensor cores through mma.sync or Hopper's wgmma, or the CPU's bf16 dot products (cpu_bf16,
// kernels/cpu/attention_bf16.cc). automatic is the backend's default choice (mma on CUDA, cpu_bf16 on the CPU); in
// fp32 precision every choice runs the fp32 kernel. A model option (Transformer::use_attention, resolved by
// Backend::resolve_attention) that every attention call is given.
enum class AttentionKernel { automatic, mma, wgmma, fp32, cpu_bf16 };
const char* attention_kernel_name(AttentionKernel k);  // "auto", "mma", "wgmma", "fp32", "cpu_bf16"
AttentionKernel parse_attention_kernel(const std::string& text);  // one of those names, else replica::Error

// A weight matrix operand: its fp32 values and, in bf16 precision, optionally the same values rounded
// (weights are rounded once per step, not per product).
struct WeightRef {
  WeightRef(const float* values, const bf16* rounded = nullptr) : f32(values), b16(rounded) {}
  const float* f32;
  const bf16* b16;
};

// A float8 GEMM operand (train.float8): codes (backend memory) laid out as gemm's float operand would be, in one
// format, and the inverse of the scale they were cast with (backend memory, one float), so that the operand's values
// are codes · inverse_scale (torch._scaled_mm's scale_a and scale_b).
struct Float8Matrix {
  const uint8_t* codes;
  Float8Format format;
  const float* inverse_scale;
};

// Attention over q [B, T, H, D] and k, v [B, T, K, D]; query i sees keys max(0, i − window + 1) ≤ j ≤ i
// (window 0: full causal; with DocumentOffsets, below, only keys of i's own document); query head h reads KV
// head h / (H / K).
// With `queries` > 0 a row holds only its last `queries` queries (q, out [B, queries, H, D], lse [B, H, queries]):
// local query i sits at key position T − queries + i, flash-attn's bottom-right alignment. A context-parallel rank
// (distributed/context_parallel.h) runs its slice of the sequence this way against the keys gathered up to its end.
struct AttentionShape {
  int64_t B, T, H, K, D, window;
  int64_t queries = 0;  // per row; 0: all T
  int64_t rows_q() const { return queries > 0 ? queries : T; }  // queries per row
  int64_t q_offset() const { return T - rows_q(); }              // the key position of query 0
};

// Attention of n new queries of one sequence, at positions p … p + n − 1, over a key/value cache (decoding): query
// i sees keys max(0, i − window + 1) ≤ j ≤ i (window 0: all of j ≤ i); keys j ≥ p are the n new ones, keys j < p
// are in the cache, the key of position j in slot j % capacity. A sliding layer's cache is a ring of W slots: the
// last W positions before p, which are all that any of the new queries sees.
struct CachedAttentionShape {
  int64_t n, position;  // new queries (and keys), and the position of the first
  int64_t H, K, D, window;
  int64_t capacity;  // slots of the cache: at least min(p, W) (sliding, W > 0) or p (full)
};

// The documents of packed rows, as flash-attn's varlen cu_seqlens: cumulative offsets into the B·T tokens,
// offsets[0] = 0 < offsets[1] < … < offsets[count] = B·T, with every row start (a multiple of T) among them, so no
// document crosses rows (a row's padding tail is a document of its own). A query then sees only the keys of its
// own document, intersected with the window; positions stay global. The offsets are in backend memory. None
// (count 0): each row is one document, the attention of every unpacked batch, bit for bit.
struct DocumentOffsets {
  const int32_t* offsets = nullptr;  // [count + 1]
  int64_t count = 0;                 // documents over the batch
};

// Floats per partial sum of the gradient norm: the blocks fix the summation order on every backend and for
// every data-parallel sharding (shards start on block boundaries).
inline constexpr size_t kSquareSumBlock = size_t(1) << 14;

// A target of kIgnoreLabel has no loss (OLMo-core's ignore index).
constexpr int32_t kIgnoreLabel = -100;

// The LM head's loss sums over labelled rows, with lse = logsumexp(logits).
struct LossSums {
  double ce = 0.0;      // Σ (lse − logit[target])
  double z = 0.0;       // Σ lse²
  int64_t n_labels = 0;
  LossSums& operator+=(const LossSums& o) {
    ce += o.ce;
    z += o.z;
    n_labels += o.n_labels;
    return *this;
  }
};

struct LmHeadGrads {
  float* dhidden;     // [N, C], overwritten
  float* dweight;     // [V, C], accumulated
  float grad_scale;   // d(loss)/d(Σ ce + z_coef Σ z): 1 / (labels in the whole optimizer batch)
};

// AdamW's fixed work unit: elements [begin, end) of the flat parameter buffer, inside one tensor; decay is
// 0 for the embedding (no weight decay), 1 elsewhere.
struct AdamWChunk {
  size_t begin, end;
  int32_t decay;
};

// With the moments in host memory (optim.host_moments), a GPU streams them through two buffers per moment of at
// most this many floats (64 MiB): 256 MiB of device memory (Backend::adamw_step_host_moments).
constexpr size_t kHostMomentSlabFloats = size_t(16) << 20;
constexpr size_t kHostMomentStagingFloats = 4 * kHostMomentSlabFloats;

// The scalars of one AdamW step, computed on the host as torch computes them (optim/adamw.cc), so every
// backend applies the same fp32 operations to every element.
struct AdamWScalars {
  float decay, w1, keep1, w2, keep2, neg_step_size, bc2_sqrt, eps;
};

}  // namespace replica
