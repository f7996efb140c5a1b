// Attention over a sequence split across the ranks of a context-parallel group (llama3 style, stage3.md §4.2): each
// rank holds a contiguous slice of the tokens, and the model hands its slice's q, k and v to this seam, whose
// implementation (distributed/context_parallel.h) brings in the other ranks' keys and values. The model never talks to
// another rank itself.
#pragma once
#include <cstdint>

#include "replica/kernels/types.h"

namespace replica::model {

class ContextAttention {
 public:
  virtual ~ContextAttention() = default;
  // The position of this rank's first token in the sequence: its RoPE rows and its queries' place in the mask.
  virtual int64_t position() const = 0;
  // The arrays of Backend::attention_forward / attention_backward for this rank's slice, `local` its shape (B = 1,
  // T = the slice's tokens, all of them queries); keys and values come from every rank, documents from the sequence.
  virtual void forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& local, Precision precision) = 0;
  virtual void backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                        const float* q, const float* k, const float* v, const AttentionShape& local,
                        Precision precision) = 0;
};

}  // namespace replica::model
