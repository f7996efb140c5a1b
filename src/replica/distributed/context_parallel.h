// Context parallelism, llama3 style as OLMo 3's stage 3 ran it (stage3.md §4.2): the N ranks of a group each hold a
// contiguous slice [r·T/N, (r + 1)·T/N) of one sequence. For every chunk of `head_stride` KV heads, attention
// all-gathers the slices' keys and values, and runs the document-masked kernel with this rank's queries at their
// global positions (AttentionShape::queries) against the keys up to the slice's end (ring-flash-attn's cu_k); no
// softmax merge is needed, since every key a query sees is then local. The backward gathers again, computes dK and
// dV for those keys, and reduce-scatters them: each rank adds the N ranks' dK/dV of its slice in rank order.
// With several chunks their buffers are doubled, so that the next chunk's gather, and the last chunk's
// reduce-scatter, are in flight (Communicator::start_exchange: on NCCL's stream) while this chunk's kernel runs; the
// arithmetic and its order are those of one chunk after another.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "replica/distributed/communicator.h"
#include "replica/kernels/backend.h"
#include "replica/model/context_attention.h"

namespace replica::distributed {

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

  // Every layer the same way (`layer` is not needed: each call gathers its own keys and values).
  void forward(int64_t layer, float* out, float* lse, const float* q, const float* k, const float* v,
               const AttentionShape& local, Precision precision, AttentionKernel kernel) override;
  void backward(int64_t layer, float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                const float* q, const float* k, const float* v, const AttentionShape& local, Precision precision,
                AttentionKernel kernel) override;

  // The floats of one layer's exchange per rank (the bench's and the plan's formula): the forward all-gathers K
  // and V, the backward gathers them again and reduce-scatters dK and dV, each moving (N − 1)/N of the T·K·D
  // values of a tensor into (all-gather) or out of (reduce-scatter) every rank: 6 (N − 1) (T / N) K D sent.
  static int64_t floats_sent_per_layer(int64_t T, int64_t N, int64_t K, int64_t D) { return 6 * (N - 1) * (T / N) * K * D; }
  // The backend memory this adds to a rank's step: the gathered K and V, the dK, dV of all keys and the other ranks'
  // dK, dV of this slice, for one chunk of `stride` KV heads (K: no chunks); with several chunks, twice that (the
  // next chunk's buffers) plus the staging of a chunk's heads.
  static size_t bytes(int64_t T, int64_t N, int64_t H, int64_t K, int64_t D, int64_t stride);

 private:
  struct Chunk;
  // One chunk's buffers: K and V of every rank's slice [N·slice, chunk heads, D], their gradients, and the other
  // ranks' dK and dV of this rank's slice as received.
  struct Slot {
    DeviceArray<float> k, v, dk, dv, received;
  };
  int64_t chunks(const AttentionShape& local) const;
  Chunk chunk(const AttentionShape& local, int64_t c) const;
  Slot& slot(int64_t c) { return slots_[c % 2]; }
  // Begins all-gathering this rank's slice of the chunk's keys and values into the slot's k and v.
  std::unique_ptr<PendingExchange> start_gather(Slot& slot, const float* k, const float* v, const Chunk& ch,
                                                const AttentionShape& local);
  // Begins sending the slot's dK and dV of the other ranks' slices to them, and receiving theirs of this one.
  std::unique_ptr<PendingExchange> start_reduce_scatter(Slot& slot, const Chunk& ch, const AttentionShape& local);
  // After the reduce-scatter: every rank's dK and dV of this rank's slice, added in rank order, into dk's and dv's
  // heads of the chunk.
  void add_scattered(float* dk, float* dv, Slot& slot, const Chunk& ch, const AttentionShape& local);

  Communicator& group_;
  Backend& be_;
  int64_t head_stride_;
  int64_t slice_ = 0;                      // T / N
  std::vector<int32_t> key_offsets_;       // the documents of keys [0, slice end), host memory
  DeviceArray<int32_t> key_offsets_device_;  // their copy where the backend's memory is not the host's
  DocumentOffsets docs_;
  Slot slots_[2];  // chunk c's in slots_[c % 2]
  DeviceArray<float> q_, out_, dout_, dq_, kv_local_;  // a chunk's heads, when chunks are not all heads
};

}  // namespace replica::distributed
