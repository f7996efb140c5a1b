// Context parallelism, llama3 style as OLMo 3's stage 3 ran it (stage3.md §4.2): the N ranks of a group each hold a
// contiguous slice [r·T/N, (r + 1)·T/N) of one sequence. For every chunk of `head_stride` KV heads, attention
// all-gathers the slices' keys and values, and runs the document-masked kernel with this rank's queries at their
// global positions (AttentionShape::queries) against the keys up to the slice's end (ring-flash-attn's cu_k); no
// softmax merge is needed, since every key a query sees is then local. The backward gathers again, computes dK and
// dV for those keys, and reduce-scatters them: each rank adds the N ranks' dK/dV of its slice in rank order.
// Chunks run one after another here; overlapping the next chunk's gather with this chunk's kernel (GPUs) is a change
// of schedule inside forward()/backward(): gather(c) and the kernel of chunk c are separate steps already.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "replica/dist/communicator.h"
#include "replica/kernels/backend.h"
#include "replica/model/context_attention.h"

namespace replica::dist {

// The recipe's train.context_parallel and train.cp_head_stride.
struct ContextParallelConfig {
  int64_t degree = 1;       // N ranks share each sequence (1: no context parallelism)
  int64_t head_stride = 0;  // KV heads all-gathered at once; 0: all of them (OLMo-core's head_stride)
  // Each rank's slice starts on a multiple of 128 tokens, so every attention kernel's query tiles (64 rows on the
  // CPU, at most 128 on GPUs) fall where they fall in the whole sequence. OLMo-core asks a multiple of 16·N.
  static constexpr int64_t kSliceMultiple = 128;
};

class ContextParallel final : public model::ContextAttention {
 public:
  // `group`: this rank's context-parallel group over the communicator that moves backend memory (Mesh::context).
  // `head_stride`: KV heads gathered at once (train.cp_head_stride; 0 or more than the model has: all of them).
  ContextParallel(Communicator& group, Backend& backend, int64_t head_stride);

  // Before each micro-batch: its sequence's length T (N divides it) and its documents (model::document_offsets of
  // the one row, host memory; empty: one document). The slice is then T / N tokens from position().
  void set_sequence(int64_t T, std::span<const int32_t> doc_offsets);
  int64_t position() const override { return int64_t(group_.rank()) * slice_; }

  void forward(float* out, float* lse, const float* q, const float* k, const float* v, const AttentionShape& local,
               Precision precision) override;
  void backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                const float* q, const float* k, const float* v, const AttentionShape& local,
                Precision precision) override;

  // The floats of one layer's exchange per rank (the bench's and the plan's formula): the forward all-gathers K
  // and V, the backward gathers them again and reduce-scatters dK and dV, each moving (N − 1)/N of the T·K·D
  // values of a tensor into (all-gather) or out of (reduce-scatter) every rank: 6 (N − 1) (T / N) K D sent.
  static int64_t floats_sent_per_layer(int64_t T, int64_t N, int64_t K, int64_t D) { return 6 * (N - 1) * (T / N) * K * D; }
  // The backend memory this adds to a rank's step: the gathered K and V and the dK, dV of all keys, for one chunk of
  // `stride` KV heads (K: no chunks), plus the staging of a chunk's heads when stride < K.
  static size_t bytes(int64_t T, int64_t N, int64_t H, int64_t K, int64_t D, int64_t stride);

 private:
  struct Chunk;
  Chunk chunk(const AttentionShape& local, int64_t c) const;
  // All-gathers this rank's slice of the chunk's keys (or values) into whole [N·slice, chunk heads, D].
  void gather(float* whole, const float* x, const Chunk& ch, const AttentionShape& local);
  // The other ranks' rows of this rank's slice of whole, added with this rank's own in rank order, into x's heads.
  void reduce_scatter(float* x, float* whole, const Chunk& ch, const AttentionShape& local);

  Communicator& group_;
  Backend& be_;
  int64_t head_stride_;
  int64_t slice_ = 0;                      // T / N
  std::vector<int32_t> key_offsets_;       // the documents of keys [0, slice end), host memory
  DeviceArray<int32_t> key_offsets_device_;  // their copy where the backend's memory is not the host's
  DocumentOffsets docs_;
  DeviceArray<float> k_whole_, v_whole_, dk_whole_, dv_whole_;  // [N·slice, chunk heads, D]
  DeviceArray<float> q_, out_, dout_, dq_, kv_local_, received_;   // a chunk's heads, when chunks are not all heads
};

}  // namespace replica::dist
