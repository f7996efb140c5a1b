// The model's activation memory from one table (llm.c's act_sizes): Workspace::each lists every buffer that
// Transformer::prepare allocates for a micro-batch with its length, and Transformer::activation_bytes (the memory plan, `replica
// plan`) sums the same list, so what is allocated and what is planned cannot drift apart. Internal to the model.
#pragma once
#include <memory>
#include <vector>

#include "replica/model/transformer.h"

namespace replica::model {

using Buffer = DeviceArray<float>;
using Buffer16 = DeviceArray<bf16>;
using Buffer8 = DeviceArray<uint8_t>;

// What a workspace is sized for: a micro-batch of [B, T], for training (with the backward's scratch) or evaluation.
struct Transformer::ActivationShape {
  // `rope`: the RoPE rows kept (the pass's own, {0, T} without a context); `through_context`: the pass's attention
  // goes through a ContextAttention, whose keys and values are fp32.
  ActivationShape(const ModelConfig& c, int64_t B, int64_t T, Remat remat, Precision precision, bool training,
                  RopeRows rope, bool through_context);
  // Whether a workspace of this shape holds every buffer `other` needs: the same ones, or training's for evaluation.
  bool serves(const ActivationShape& other) const;

  int64_t B, T, N;            // N = B·T rows
  RopeRows rope;              // the rows of the RoPE tables
  size_t C, F, HD, KD, lse;   // widths, and the log-sum-exp's B·H·T
  size_t layers;              // L
  // Which of a block's three groups of activations (below) training keeps per layer, by the remat policy; a group
  // not kept is one set the blocks share, and the backward recomputes it.
  bool per_layer_gemms;      // none, selective
  bool per_layer_attention;  // none, selective, keep_attention
  bool per_layer_cheap;      // none
  // (rope.end − rope.first)·D/2 for each RoPE table some layer rotates with (ModelConfig::yarn_layer), else 0.
  size_t rope_plain, rope_yarn;
  bool training, bf16;
  bool pre_norm;  // the branch norms' outputs are kept (pre-norm); reordered, the fused norm and add never writes them
  bool float8 = false;  // Transformer::use_float8: the float8 Linears' scratch
  // bf16 copies of the attention's inputs (CheapOutputs::qr16, kr16, v16): in bf16, unless the pass goes through a
  // context (a context-parallel slice, whose keys and values travel in fp32; a KV cache, which keeps them in fp32).
  bool attention_inputs16;

  size_t sets(bool per_layer) const { return per_layer ? layers : 1; }
  // Whether the backward has to run a block's forward again: something it reads was not kept for its layer.
  bool recomputes() const { return !per_layer_cheap; }
};

// Saved activations of one block (N = B·T rows), in three groups by what they cost to compute again.
// The block's seven products: projections [N, H·D], [N, K·D], [N, K·D], o_proj [N, C], gate and up [N, F],
// down [N, C].
struct Transformer::GemmOutputs {
  Buffer q, k, v, ao, g, u, m;
};
// Attention output [N, H·D] and log-sum-exp [B, H, T].
struct Transformer::AttentionOutputs {
  Buffer att, lse;
};
// What the memory-bound passes between the products write: a few passes over the products, cheap to repeat.
struct Transformer::CheapOutputs {
  Buffer qr, kr;          // after QK-norm and RoPE: attention inputs
  Buffer rstd_q, rstd_k;  // [N]
  Buffer n1, rstd1;       // norm1 output [N, C] (pre-norm only) and its rstd
  Buffer h;               // residual after the attention branch [N, C]
  Buffer s;               // silu(gate)·up [N, F]
  Buffer n2, rstd2;       // norm2 output and its rstd
  // bf16: the four GEMM inputs rounded once, for their forward products and the weight gradients, and the
  // attention's inputs rounded once for its forward and backward.
  Buffer16 attn_in16, att16, mlp_in16, s16;
  Buffer16 qr16, kr16, v16;
};

// One block's activations as the block code reads and writes them: its layer's set of each group, or the shared one.
struct Transformer::BlockActs {
  float *q, *k, *v, *ao, *g, *u, *m;
  float *att, *lse;
  float *qr, *kr, *rstd_q, *rstd_k, *n1, *rstd1, *h, *s, *n2, *rstd2;
  bf16 *attn_in16, *att16, *mlp_in16, *s16;
  bf16 *qr16, *kr16, *v16;
};

// Everything sized by (B, T): residual stream per layer, block activations, backward scratch, the RoPE tables.
struct Transformer::Workspace {
  Workspace(Backend& backend, const ModelConfig& c, const ActivationShape& shape);  // allocates the table's buffers
  static size_t bytes(const ActivationShape& shape);                                  // what that allocates
  BlockActs block(int64_t layer);  // the buffers layer `layer` uses

  ActivationShape shape;
  RopeBuffers rope, yarn;  // plain RoPE and, on the full-attention layers of a scaled model, YaRN
  std::vector<Buffer> resid;        // [L + 1][N, C]: block inputs, then the last block's output
  std::vector<GemmOutputs> gemms;            // ActivationShape::sets of each group
  std::vector<AttentionOutputs> attention;
  std::vector<CheapOutputs> cheap;
  Buffer final_out, final_rstd;
  // Backward scratch.
  Buffer dres, dfinal, dq, dk, dv, dqr, dkr, datt, dao, dx_branch, dg, du, ds, dm;
  Buffer16 dy16;  // bf16: each output gradient rounded once for both of its products (SwiGLU's two side by side)
  // float8: the codes of one Linear's two operands and their inverse scales (model/float8_linear.h).
  Buffer8 f8_a, f8_b;
  Buffer f8_scales;
  // Evaluation, outside the table (sized by the rows head_logits scores): rows of final_out gathered for the LM
  // head, and their logits off the host.
  Buffer head_rows, head_logits;

 private:
  explicit Workspace(const ActivationShape& shape) : shape(shape) {}  // the table, nothing allocated
  template <typename Visit>
  void each(Visit&& visit);  // sizes the vectors, then visit(buffer, length) for every buffer of the table
};

}  // namespace replica::model
