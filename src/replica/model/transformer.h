// The decoder transformer: OLMo 3, OLMo 2 and Llama are configs of it (model/config.h). Forward and backward over one
// flat fp32 parameter buffer laid out by ParamTable, on the CPU or a GPU (kernels/backend.h). Every layer's backward
// is hand-written beside its forward in the kernels; this file wires them into blocks and the model.
// Parameter and gradient pointers are in the backend's memory; token ids and targets are host memory.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/config.h"
#include "replica/model/context_attention.h"
#include "replica/model/float8_linear.h"
#include "replica/model/gradient_sink.h"
#include "replica/model/weight_source.h"
#include "replica/model/params.h"
#include "replica/model/rope.h"

namespace replica::model {

// Activation recomputation: `none` keeps every block's activations for the backward pass; `block` keeps
// only each block's input and recomputes the block's forward just before its backward; `keep_attention` does
// the same but also keeps each block's attention output and log-sum-exp, so the recomputation skips the
// attention kernel (the costliest non-GEMM work) for N·(H·D + H) floats per layer; `selective` keeps those and
// the outputs of the block's seven GEMMs, and recomputes only the memory-bound passes between them (QK-norm and
// RoPE, the norms and residual adds, SwiGLU, the bf16 copies). All four give the same bits.
enum class Remat { none, block, keep_attention, selective };
Remat parse_remat(const std::string& text);
const char* remat_name(Remat remat);

// One micro-batch: ids and targets are [B, T]; a target of kIgnoreLabel has no loss. doc_offsets: the packed rows'
// documents (model/document_offsets.h, host memory), which attention keeps apart; empty: each row is one document.
// context: the rows are a part of one longer sequence whose other keys and values a ContextAttention strategy holds
// (model/context_attention.h: a context-parallel rank's slice, or generation's KV cache; B = 1, T = the part, its
// documents the context's, doc_offsets empty): RoPE from its position, attention through it.
struct MicroBatch {
  const int32_t* ids;
  const int32_t* targets;
  int64_t B, T;
  std::span<const int32_t> doc_offsets = {};
  ContextAttention* context = nullptr;
};

// OLMo-core labels: targets[t] = ids[t + 1] within each instance; the last position has no label.
std::vector<int32_t> shifted_targets(const int32_t* ids, int64_t B, int64_t T);

class Transformer {
 public:
  // The backend runs every kernel and holds every buffer (weights and gradients passed in are its memory).
  Transformer(ModelConfig config, Precision precision, Remat remat, Backend& backend);
  ~Transformer();

  // train.float8: every block Linear whose dimensions are divisible by 16 runs in float8 (model/float8_linear.h);
  // the LM head and everything that is not a Linear stay in the model's precision. Off until turned on.
  void use_float8(bool on);
  bool float8() const { return float8_; }
  // The attention kernel of every pass (the recipe's train.attention, as a run records it): `wanted` resolved by the
  // backend (Backend::resolve_attention: automatic becomes its default, one it has not is a replica::Error), which
  // is returned. Until then, automatic's.
  AttentionKernel use_attention(AttentionKernel wanted);
  AttentionKernel attention() const { return attention_; }

  const ModelConfig& config() const { return config_; }
  const ParamTable& table() const { return table_; }
  Precision precision() const { return precision_; }
  Backend& backend() const { return be_; }

  // Forward and backward of one micro-batch. Gradients of (Σ ce + z_coef · Σ z) · grad_scale are
  // added to `grads` (same layout as params); pass grad_scale = 1 / labels in the optimizer batch.
  LossSums forward_backward(const float* params, float* grads, const MicroBatch& batch, float z_coef, float grad_scale);
  // The same, group by group: weights from `weights` and gradients into `sink`. Weights are acquired for the
  // embedding, blocks 0 … L-1 and the head group in the forward, then the head group (with the embedding when the LM
  // head is tied to it) and blocks L-1 … 0 again in the backward, each released right after use. Gradients go to
  // the head group, blocks L-1 … 0 and the embedding (opened first and closed last when tied), each opened just
  // before and closed right after its backward.
  LossSums forward_backward(WeightSource& weights, GradientSink& sink, const MicroBatch& batch, float z_coef,
                            float grad_scale);
  // The model's view of a whole weight buffer (backend memory), with the bf16 copy it keeps for bf16 GEMMs, rounded
  // at the first use after the weights changed. `version`: the counter the buffer's owner bumps whenever it changes
  // them (WholeWeights), so the view may be taken again, or kept, across updates.
  WeightSource& whole_weights(const float* params, const WeightsVersion& version) {
    whole_.set(params, version);
    return whole_;
  }
  // Weights without a version: each call counts as a change, so call it again once the weights have changed. The
  // calls that take `const float* params` go through it.
  WeightSource& whole_weights(const float* params) {
    whole_.set(params);
    return whole_;
  }
  // Loss sums only (evaluation).
  LossSums forward_loss(const float* params, const MicroBatch& batch, float z_coef);
  LossSums forward_loss(WeightSource& weights, const MicroBatch& batch, float z_coef);
  // Full logits [B, T, V] into host memory (the parity hook; not for training).
  void forward_logits(const float* params, const int32_t* ids, int64_t B, int64_t T, float* logits);
  // Evaluation applies the LM head only to the rows it scores: forward_hidden runs the model up to the
  // final norm, then head_logits computes the logits [n, V] (host memory) of rows `rows` (indices into the
  // B·T positions), both with the same weights. `context`: as MicroBatch::context (generation: a KV cache).
  void forward_hidden(WeightSource& weights, const int32_t* ids, int64_t B, int64_t T,
                      ContextAttention* context = nullptr);
  void head_logits(WeightSource& weights, const int64_t* rows, int64_t n, float* logits);

  // Bytes of activation memory one micro-batch of [B, T] needs under `remat` in training: exactly what
  // forward_backward allocates (for the memory plan); `context_parallel`: for a slice of a sequence (T its tokens);
  // `float8`: with use_float8(true), the float8 Linears' scratch included.
  static size_t activation_bytes(const ModelConfig& config, Remat remat, int64_t B, int64_t T, Precision precision,
                                 bool context_parallel = false, bool float8 = false);
  // Bytes of activation memory one evaluation forward of [B, T] allocates (forward_loss, forward_hidden): no
  // backward's scratch, no per-layer activations kept.
  static size_t evaluation_activation_bytes(const ModelConfig& config, int64_t B, int64_t T, Precision precision);

 private:
  // The activation memory (model/activations.h).
  struct ActivationShape;
  struct GemmOutputs;
  struct AttentionOutputs;
  struct CheapOutputs;
  struct BlockActs;
  struct Workspace;
  // Sizes the activations for [B, T] and puts the micro-batch's documents (`doc_offsets`, checked) where every
  // attention call of this pass reads them (docs_), and its context (context_: none, or the rest of the sequence,
  // the pass from context->position()).
  void prepare(int64_t B, int64_t T, bool for_training, std::span<const int32_t> doc_offsets,
               ContextAttention* context = nullptr);
  void check_ids(const int32_t* ids, int64_t n) const;
  // An activation as a GEMM operand: in bf16, rounded once into x16 (n values) for every product that reads it.
  WeightRef rounded(const float* x, bf16* x16, size_t n);
  // A block Linear's products y = x·wᵀ (x [M, K], w [N, K]) and its backward (dx = or += dy·w, then dw += dyᵀ·x): in
  // float8 when it is on and the layer qualifies, else in the model's precision.
  void linear(float* y, WeightRef x, WeightRef w, int64_t M, int64_t N, int64_t K);
  void linear_backward(float* dx, float* dw, WeightRef dy, WeightRef x, WeightRef w, int64_t M, int64_t N, int64_t K,
                       bool accumulate_dx);
  Float8Scratch float8_scratch();  // the workspace's
  GroupWeights acquire(WeightSource& weights, ParamTable::Range range) const {
    return weights.acquire(range, precision_);
  }
  bool reordered() const { return config_.norm_placement == NormPlacement::reordered; }
  float eps() const { return float(config_.norm_eps); }
  // Embedding and blocks: ws_->resid.back() holds the last block's output.
  void forward_blocks(WeightSource& weights, const int32_t* ids);
  // The final norm of the last block's output into ws_->final_out (`head`: the head group's weights).
  void final_norm(const GroupWeights& head);
  // The LM head: in the head group (`head`), or tied, the embedding matrix, whose group this acquires.
  WeightRef lm_head_weights(WeightSource& weights, const GroupWeights& head);
  // Final norm, LM head and loss, with `grads` the LM head's backward too; a tied LM head's group is released after.
  LossSums head_loss(WeightSource& weights, const GroupWeights& head, const int32_t* targets, float z_coef,
                     const LmHeadGrads* grads);

  // One group's gradient memory, addressed by flat-buffer offsets.
  struct GroupGrads {
    float* base;
    size_t begin;
    float* operator()(size_t offset) const { return base + (offset - begin); }
  };
  // A block is two branches, attention then MLP (transformer.cc's header). `recompute`: the backward's rerun of a
  // block, which skips the calls whose outputs the remat policy kept for the layer. In the backward, dres holds the
  // gradient of the branch's (block's) output on entry and of its input on exit.
  void block_forward(const GroupWeights& P, int64_t layer, const float* x, float* out, const BlockActs& a,
                     bool recompute = false);
  void block_backward(const GroupWeights& P, const GroupGrads& G, int64_t layer, const float* x, const BlockActs& a,
                      float* dres);
  void attention_branch_forward(const GroupWeights& P, int64_t layer, const float* x, const BlockActs& a,
                                bool recompute);
  void attention_branch_backward(const GroupWeights& P, const GroupGrads& G, int64_t layer, const float* x,
                                 const BlockActs& a, float* dres);
  void mlp_branch_forward(const GroupWeights& P, int64_t layer, float* out, const BlockActs& a, bool recompute);
  void mlp_branch_backward(const GroupWeights& P, const GroupGrads& G, int64_t layer, const BlockActs& a, float* dres);
  // The pass's rows of the layer's RoPE tables, from its position: YaRN on a scaled model's full layers, else plain.
  struct RopeAt {
    const float *cos, *sin;
  };
  RopeAt rope_at(int64_t layer) const;

  // A branch's norm (norm1 around attention, norm2 around the MLP): its weight's offset, its output and its rstd.
  struct BranchNorm {
    size_t weight;
    float* y;
    float* rstd;
  };
  // The input of the branch's sublayer: norm(x) (pre-norm, computed here) or x itself (reordered).
  const float* branch_norm_in(const GroupWeights& P, const BranchNorm& n, const float* x);
  const float* branch_input(const BranchNorm& n, const float* x) const;  // the same, as the forward left it
  // out = x + sublayer (pre-norm) or x + norm(sublayer) (reordered, in one fused pass that also writes out16, the
  // next branch's input rounded, when given).
  void branch_norm_out(const GroupWeights& P, const BranchNorm& n, float* out, bf16* out16, const float* x,
                       const float* sublayer);
  // Backward of branch_norm_out: d(sublayer) from dout = d(out), which is dout itself (pre-norm) or goes through the
  // norm into `scratch` (reordered, adding the norm weight's gradient); in bf16 rounded into scratch16 for the
  // sublayer's two products.
  WeightRef branch_norm_out_backward(const GroupWeights& P, const GroupGrads& G, const BranchNorm& n, const float* dout,
                                     const float* sublayer, float* scratch, bf16* scratch16);
  // Backward of branch_norm_in: adds to dres (which holds d(out) through the residual) the gradient that reaches x
  // through the sublayer's input, dinput.
  void branch_norm_in_backward(const GroupWeights& P, const GroupGrads& G, const BranchNorm& n, float* dres,
                               const float* dinput, const float* x);

  ModelConfig config_;
  ParamTable table_;
  Precision precision_;
  Remat remat_;
  bool float8_ = false;
  Backend& be_;
  AttentionKernel attention_;
  std::unique_ptr<Workspace> ws_;
  WholeWeights whole_;  // whole_weights(): the last whole buffer passed in
  DocumentOffsets docs_;              // the documents of the pass in progress (backend memory), or none
  ContextAttention* context_ = nullptr;  // the pass's sequence beyond its rows (MicroBatch::context), or none
  int64_t position_ = 0;                 // of the pass's first token: context_->position(), else 0
  DeviceArray<int32_t> doc_offsets_;  // their copy on a backend whose memory the host cannot read
};

}  // namespace replica::model
