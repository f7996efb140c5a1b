// What the attention kernels of both backends share (kernels/cpu/attention.h, kernels/cuda/attention.h, the cached
// kernels of decoding): the shapes, the documents of packed rows, and which kernel runs attention. Header-only types,
// so the CUDA library and the standalone GPU checks (tests/gpu) use them without libreplica; the kernels' names are
// parsed in attention.cc. Which keys a query sees is kernels/attention_mask.h.
#pragma once
#include <cstdint>
#include <string>

namespace replica {

// Which kernel runs attention (the recipe's train.attention): fp32 on CUDA cores or the CPU, or, in bf16 precision,
// tensor cores through mma.sync or Hopper's wgmma, or the CPU's bf16 dot products (cpu_bf16,
// kernels/cpu/attention_bf16.cc). automatic is the backend's default choice (mma on CUDA, cpu_bf16 on the CPU); in
// fp32 precision every choice runs the fp32 kernel. A model option (Transformer::use_attention, resolved by
// Backend::resolve_attention) that every attention call is given.
enum class AttentionKernel { automatic, mma, wgmma, fp32, cpu_bf16 };
const char* attention_kernel_name(AttentionKernel k);             // "auto", "mma", "wgmma", "fp32", "cpu_bf16"
AttentionKernel parse_attention_kernel(const std::string& text);  // one of those names, else replica::Error

// Attention over q [B, T, H, D] and k, v [B, T, K, D]; query i sees keys max(0, i − window + 1) ≤ j ≤ i
// (window 0: full causal; with DocumentOffsets, below, only keys of i's own document); query head h reads KV
// head h / (H / K).
// With `queries` > 0 a row holds only its last `queries` queries (q, out [B, queries, H, D], lse [B, H, queries]):
// local query i sits at key position T − queries + i, flash-attn's bottom-right alignment. A context-parallel rank
// (distributed/context_parallel.h) runs its slice of the sequence this way against the keys gathered up to its end.
struct AttentionShape {
  int64_t B, T, H, K, D, window;
  int64_t queries = 0;                                          // per row; 0: all T
  int64_t rows_q() const { return queries > 0 ? queries : T; }  // queries per row
  int64_t q_offset() const { return T - rows_q(); }             // the key position of query 0
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

}  // namespace replica
