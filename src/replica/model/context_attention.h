// Attention over keys and values beyond the pass's own rows: the seam through which one forward (model/transformer.cc)
// serves every way a sequence is split. The model hands its rows' q, k and v to a strategy, which brings in the rest:
//   - a context-parallel slice (distributed/context_parallel.h, llama3 style, stage3.md §4.2): each rank holds a
//     contiguous slice of the tokens and gathers the other ranks' keys and values; forward and backward;
//   - generation's KV cache (model/kv_cache.h): the rows are the tokens appended to a sequence, the keys and values
//     of the positions before them are kept from the earlier passes; forward only.
// The model never talks to another rank or keeps keys across passes itself.
#pragma once
#include <cstdint>

#include "replica/kernels/attention.h"
#include "replica/kernels/precision.h"

namespace replica::model {

// Rows [first, end) of the RoPE tables (model/rope.h).
struct RopeRows {
  int64_t first, end;
};

class ContextAttention {
 public:
  virtual ~ContextAttention() = default;
  // The position of the pass's first token in the sequence: its RoPE rows and its queries' place in the mask.
  virtual int64_t position() const = 0;
  // The RoPE rows the model keeps for a pass of T tokens through this context: by default the pass's own
  // [position, position + T); a strategy whose passes move along the sequence (a KV cache) names every row they may
  // reach, so that the model builds its tables once for all of them.
  virtual RopeRows rope_rows(int64_t T) const { return {position(), position() + T}; }
  // The arrays of Backend::attention_forward / attention_backward for the pass's rows of block `layer`, `local` their
  // shape (B = 1, T = the pass's tokens, all of them queries); keys and values come from the whole sequence,
  // documents from the strategy. q, k and v are fp32 (their bf16 copies are the strategy's to make); `kernel` is the
  // model's attention kernel (Transformer::use_attention). lse: the backward's, which a forward-only strategy need
  // not write.
  virtual void forward(int64_t layer, float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& local, Precision precision, AttentionKernel kernel) = 0;
  virtual void backward(int64_t layer, float* dq, float* dk, float* dv, const float* dout, const float* out,
                        const float* lse, const float* q, const float* k, const float* v, const AttentionShape& local,
                        Precision precision, AttentionKernel kernel) = 0;
};

}  // namespace replica::model
