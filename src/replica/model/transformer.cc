// Transformer forward and backward: embedding → blocks → final norm → fused LM head + loss.
//
// Block with reordered norms (OLMo 2/3):        Block with pre-norm (Llama):
//   h   = x + norm1(attn(x))                       h   = x + attn(norm1(x))
//   out = h + norm2(mlp(h))                        out = h + mlp(norm2(h))
// attn(x) = o_proj(attention(rope(q_norm(q_proj x)), rope(k_norm(k_proj x)), v_proj x))
// mlp(x)  = down_proj(silu(gate_proj x) · up_proj x)
#include "replica/model/transformer.h"

#include "replica/core/error.h"
#include "replica/model/activations.h"
#include "replica/model/document_offsets.h"
#include "replica/model/float8_linear.h"

namespace replica::model {

Remat parse_remat(const std::string& text) {
  for (Remat r : {Remat::none, Remat::selective, Remat::keep_attention, Remat::block})
    if (text == remat_name(r)) return r;
  fail("remat policy must be 'none', 'selective', 'keep_attention' or 'block', got '{}'", text);
}

const char* remat_name(Remat remat) {
  switch (remat) {
    case Remat::none: return "none";
    case Remat::selective: return "selective";
    case Remat::keep_attention: return "keep_attention";
    case Remat::block: return "block";
  }
  return "?";
}

std::vector<int32_t> shifted_targets(const int32_t* ids, int64_t B, int64_t T) {
  std::vector<int32_t> targets(size_t(B * T));
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++) targets[size_t(b * T + t)] = t + 1 < T ? ids[b * T + t + 1] : kIgnoreLabel;
  return targets;
}

Transformer::Transformer(ModelConfig config, Precision precision, Remat remat, Backend& backend)
    : config_(std::move(config)), table_(config_), precision_(precision), remat_(remat), be_(backend),
      attention_(backend.resolve_attention(AttentionKernel::automatic)), whole_(backend, table_.total()) {}

Transformer::~Transformer() = default;

void Transformer::prepare(int64_t B, int64_t T, bool for_training, std::span<const int32_t> doc_offsets,
                          ContextAttention* context) {
  const int64_t position = context ? context->position() : 0;
  check(position + T <= config_.max_seq_len, "sequence length {} exceeds max_position_embeddings {}", position + T,
        config_.max_seq_len);
  check(!context || (B == 1 && doc_offsets.empty()),
        "a pass through a context (a context-parallel slice, a KV cache) is one row ({} given) whose documents its "
        "context holds",
        B);
  check_document_offsets(doc_offsets, B, T);
  context_ = context;
  position_ = position;
  docs_ = {};
  if (!doc_offsets.empty()) {
    docs_ = {doc_offsets.data(), int64_t(doc_offsets.size()) - 1};
    if (!be_.host_memory()) {  // room for the most documents [B, T] can hold, so a later micro-batch fits too
      if (doc_offsets_.size() < doc_offsets.size()) doc_offsets_ = DeviceArray<int32_t>(be_, size_t(B * T + 1));
      be_.to_device(doc_offsets_.data(), doc_offsets.data(), doc_offsets.size_bytes());
      docs_.offsets = doc_offsets_.data();
    }
  }
  const RopeRows rope = context ? context->rope_rows(T) : RopeRows{0, T};
  check(rope.first <= position && position + T <= rope.end && rope.end <= config_.max_seq_len,
        "the context's RoPE rows [{}, {}) do not hold the pass's [{}, {})", rope.first, rope.end, position,
        position + T);
  ActivationShape shape(config_, B, T, remat_, precision_, for_training, rope, context != nullptr);
  shape.float8 = float8_;
  if (ws_ && ws_->shape.serves(shape)) return;
  ws_.reset();  // the old buffers go before the new ones come
  ws_ = std::make_unique<Workspace>(be_, config_, shape);
}

WeightRef Transformer::rounded(const float* x, bf16* x16, size_t n) {
  if (precision_ != Precision::bf16) return {x};
  be_.convert_to_bf16(x, x16, n);
  return {x, x16};
}

AttentionKernel Transformer::use_attention(AttentionKernel wanted) {
  attention_ = be_.resolve_attention(wanted);
  return attention_;
}

void Transformer::use_float8(bool on) {
  if (on == float8_) return;
  float8_ = on;
  ws_.reset();  // the next pass allocates the float8 scratch, or no longer does
}

Float8Scratch Transformer::float8_scratch() {
  return {ws_->f8_a.data(), ws_->f8_b.data(), ws_->f8_scales.data()};
}

void Transformer::linear(float* y, WeightRef x, WeightRef w, int64_t M, int64_t N, int64_t K) {
  if (float8_ && float8_eligible(N, K))
    float8_linear_forward(be_, float8_scratch(), y, x, w.f32, M, N, K);
  else
    be_.linear_forward(y, x, w, M, N, K, precision_);
}

void Transformer::linear_backward(float* dx, float* dw, WeightRef dy, WeightRef x, WeightRef w, int64_t M, int64_t N,
                                  int64_t K, bool accumulate_dx) {
  if (float8_ && float8_eligible(N, K)) {
    float8_linear_backward(be_, float8_scratch(), dx, dw, dy, x, w.f32, M, N, K, accumulate_dx);
    return;
  }
  be_.linear_backward_input(dx, dy, w, M, N, K, accumulate_dx, precision_);
  be_.linear_backward_weight(dw, dy, x, M, N, K, precision_);
}

void Transformer::check_ids(const int32_t* ids, int64_t n) const {
  for (int64_t i = 0; i < n; i++)
    check(ids[i] >= 0 && ids[i] < config_.vocab_size, "token id {} at position {} is outside the vocabulary [0, {})",
          ids[i], i, config_.vocab_size);
}

Transformer::RopeAt Transformer::rope_at(int64_t layer) const {
  const RopeBuffers& table = config_.yarn_layer(layer) ? ws_->yarn : ws_->rope;
  const int64_t skip = (position_ - ws_->shape.rope.first) * config_.head_dim / 2;
  return {table.cos.data() + skip, table.sin.data() + skip};
}

// ---- one block: two branches, each forward beside its backward ---------------------------------------------
// A branch adds a sublayer (attention, MLP) to the residual stream with its norm around the sublayer's input
// (pre-norm) or its output (reordered); only the branch_norm_* helpers below look at which.

const float* Transformer::branch_input(const BranchNorm& n, const float* x) const { return reordered() ? x : n.y; }

const float* Transformer::branch_norm_in(const GroupWeights& P, const BranchNorm& n, const float* x) {
  if (!reordered()) be_.rmsnorm_forward(n.y, n.rstd, x, P(n.weight), ws_->shape.N, config_.d_model, eps());
  return branch_input(n, x);
}

void Transformer::branch_norm_out(const GroupWeights& P, const BranchNorm& n, float* out, bf16* out16, const float* x,
                                  const float* sublayer) {
  const int64_t N = ws_->shape.N, C = config_.d_model;
  if (reordered())
    be_.rmsnorm_add_forward(out, out16, n.rstd, x, sublayer, P(n.weight), N, C, eps());
  else
    be_.add(out, x, sublayer, N * C);
}

WeightRef Transformer::branch_norm_out_backward(const GroupWeights& P, const GroupGrads& G, const BranchNorm& n,
                                                const float* dout, const float* sublayer, float* scratch,
                                                bf16* scratch16) {
  const int64_t N = ws_->shape.N, C = config_.d_model;
  if (!reordered()) return rounded(dout, scratch16, size_t(N * C));
  be_.rmsnorm_backward(scratch, scratch16, G(n.weight), dout, sublayer, P(n.weight), n.rstd, N, C, false);
  return {scratch, scratch16};
}

void Transformer::branch_norm_in_backward(const GroupWeights& P, const GroupGrads& G, const BranchNorm& n, float* dres,
                                    const float* dinput, const float* x) {
  const int64_t N = ws_->shape.N, C = config_.d_model;
  if (reordered()) {
    be_.add(dres, dres, dinput, N * C);
  } else {
    be_.rmsnorm_backward(dres, nullptr, G(n.weight), dinput, x, P(n.weight), n.rstd, N, C, true);
  }
}

// a.h = x + the attention branch.
void Transformer::attention_branch_forward(const GroupWeights& P, int64_t layer, const float* x, const BlockActs& a,
                                     bool recompute) {
  const ModelConfig& c = config_;
  const BlockOffsets& o = table_.blocks[size_t(layer)];
  const int64_t B = ws_->shape.B, T = ws_->shape.T, N = B * T, C = c.d_model, HD = c.q_width(), KD = c.kv_width();
  const Precision p = precision_;
  const BranchNorm norm{o.norm1, a.n1, a.rstd1};

  // What a recomputation finds kept for this layer is what these calls would compute again, bit for bit.
  const bool redo_gemms = !(recompute && ws_->shape.per_layer_gemms);
  const bool redo_attention = !(recompute && ws_->shape.per_layer_attention);

  const WeightRef attn_in = rounded(branch_norm_in(P, norm, x), a.attn_in16, size_t(N * C));
  if (redo_gemms) {
    linear(a.q, attn_in, P.matrix(o.wq), N, HD, C);
    linear(a.k, attn_in, P.matrix(o.wk), N, KD, C);
    linear(a.v, attn_in, P.matrix(o.wv), N, KD, C);
  }
  const RopeAt rope = rope_at(layer);
  // In bf16 the attention's inputs are rounded once here, as QK-norm + RoPE write them, for its forward and backward
  // (a.qr16, a.kr16, a.v16). In fp32, and through a context, whose keys and values travel in fp32 and are rounded
  // where they arrive (or, in a KV cache, stay fp32), there are none (null).
  const bool round_inputs = ws_->shape.attention_inputs16;
  if (c.qk_norm) {  // QK-norm and RoPE (and the rounding) in one pass
    be_.rmsnorm_rope_forward(a.qr, a.qr16, a.rstd_q, a.q, P(o.q_norm.value()), rope.cos, rope.sin, B, T, c.n_heads,
                             c.head_dim, eps());
    be_.rmsnorm_rope_forward(a.kr, a.kr16, a.rstd_k, a.k, P(o.k_norm.value()), rope.cos, rope.sin, B, T,
                             c.n_kv_heads, c.head_dim, eps());
  } else {
    be_.copy(a.qr, a.q, size_t(N * HD));
    be_.copy(a.kr, a.k, size_t(N * KD));
    be_.rope_forward(a.qr, rope.cos, rope.sin, B, T, c.n_heads, c.head_dim);
    be_.rope_forward(a.kr, rope.cos, rope.sin, B, T, c.n_kv_heads, c.head_dim);
    if (round_inputs) {
      be_.convert_to_bf16(a.qr, a.qr16, size_t(N * HD));
      be_.convert_to_bf16(a.kr, a.kr16, size_t(N * KD));
    }
  }
  if (round_inputs) be_.convert_to_bf16(a.v, a.v16, size_t(N * KD));
  const AttentionShape shape{B, T, c.n_heads, c.n_kv_heads, c.head_dim, c.window(layer)};
  if (redo_attention) {
    if (context_)
      context_->forward(layer, a.att, a.lse, a.qr, a.kr, a.v, shape, p, attention_);
    else
      be_.attention_forward(a.att, a.lse, {a.qr, a.qr16}, {a.kr, a.kr16}, {a.v, a.v16}, shape, docs_, p, attention_);
  }
  const WeightRef att = rounded(a.att, a.att16, size_t(N * HD));
  if (redo_gemms) linear(a.ao, att, P.matrix(o.wo), N, C, HD);
  branch_norm_out(P, norm, a.h, reordered() ? a.mlp_in16 : nullptr, x, a.ao);
}

// On entry dres = d(loss)/d(a.h); on exit d(loss)/dx.
void Transformer::attention_branch_backward(const GroupWeights& P, const GroupGrads& G, int64_t layer, const float* x,
                                      const BlockActs& a, float* dres) {
  const ModelConfig& c = config_;
  const BlockOffsets& o = table_.blocks[size_t(layer)];
  Workspace& w = *ws_;
  const int64_t B = w.shape.B, T = w.shape.T, N = B * T, C = c.d_model, HD = c.q_width(), KD = c.kv_width();
  const Precision p = precision_;
  const BranchNorm norm{o.norm1, a.n1, a.rstd1};

  const WeightRef dao16 = branch_norm_out_backward(P, G, norm, dres, a.ao, w.dao.data(), w.dy16.data());
  linear_backward(w.datt.data(), G(o.wo), dao16, {a.att, a.att16}, P.matrix(o.wo), N, C, HD, false);
  const AttentionShape shape{B, T, c.n_heads, c.n_kv_heads, c.head_dim, c.window(layer)};
  if (context_)
    context_->backward(layer, w.dqr.data(), w.dkr.data(), w.dv.data(), w.datt.data(), a.att, a.lse, a.qr, a.kr, a.v,
                       shape, p, attention_);
  else
    be_.attention_backward(w.dqr.data(), w.dkr.data(), w.dv.data(), w.datt.data(), a.att, a.lse, {a.qr, a.qr16},
                           {a.kr, a.kr16}, {a.v, a.v16}, shape, docs_, p, attention_);
  const RopeAt rope = rope_at(layer);
  be_.rope_backward(w.dqr.data(), rope.cos, rope.sin, B, T, c.n_heads, c.head_dim);
  be_.rope_backward(w.dkr.data(), rope.cos, rope.sin, B, T, c.n_kv_heads, c.head_dim);
  // d(q_proj output) and d(k_proj output), rounded for their two products: through QK-norm's backward, which rounds
  // as it writes, or straight from RoPE's. They share w.dy16, so each one's products run before the next is rounded.
  auto through_norm = [&](float* d_normed, float* d_in, const std::optional<size_t>& weight, const float* in,
                          const float* rstd, int64_t width) -> WeightRef {
    if (!weight) return rounded(d_normed, w.dy16.data(), size_t(N * width));
    be_.rmsnorm_backward(d_in, w.dy16.data(), G(*weight), d_normed, in, P(*weight), rstd, N, width, false);
    return {d_in, w.dy16.data()};
  };
  const WeightRef attn_in{branch_input(norm, x), a.attn_in16};
  const WeightRef dq16 = through_norm(w.dqr.data(), w.dq.data(), o.q_norm, a.q, a.rstd_q, HD);
  linear_backward(w.dx_branch.data(), G(o.wq), dq16, attn_in, P.matrix(o.wq), N, HD, C, false);
  const WeightRef dk16 = through_norm(w.dkr.data(), w.dk.data(), o.k_norm, a.k, a.rstd_k, KD);
  linear_backward(w.dx_branch.data(), G(o.wk), dk16, attn_in, P.matrix(o.wk), N, KD, C, true);
  const WeightRef dv16 = rounded(w.dv.data(), w.dy16.data(), size_t(N * KD));
  linear_backward(w.dx_branch.data(), G(o.wv), dv16, attn_in, P.matrix(o.wv), N, KD, C, true);
  branch_norm_in_backward(P, G, norm, dres, w.dx_branch.data(), x);
}

// out = a.h + the MLP branch.
void Transformer::mlp_branch_forward(const GroupWeights& P, int64_t layer, float* out, const BlockActs& a,
                                     bool recompute) {
  const BlockOffsets& o = table_.blocks[size_t(layer)];
  const int64_t N = ws_->shape.N, C = config_.d_model, F = config_.ffn_hidden;
  const BranchNorm norm{o.norm2, a.n2, a.rstd2};
  const bool redo_gemms = !(recompute && ws_->shape.per_layer_gemms);

  // Reordered, a.h is the input itself, which the attention branch's norm rounded into a.mlp_in16 as it wrote it.
  const WeightRef mlp_in = reordered() ? WeightRef{a.h, a.mlp_in16}
                                       : rounded(branch_norm_in(P, norm, a.h), a.mlp_in16, size_t(N * C));
  if (redo_gemms) {
    linear(a.g, mlp_in, P.matrix(o.w_gate), N, F, C);
    linear(a.u, mlp_in, P.matrix(o.w_up), N, F, C);
  }
  be_.swiglu_forward(a.s, a.s16, a.g, a.u, N * F);
  if (redo_gemms) linear(a.m, {a.s, a.s16}, P.matrix(o.w_down), N, C, F);
  branch_norm_out(P, norm, out, nullptr, a.h, a.m);
}

// On entry dres = d(loss)/d(block output); on exit d(loss)/d(a.h).
void Transformer::mlp_branch_backward(const GroupWeights& P, const GroupGrads& G, int64_t layer, const BlockActs& a,
                                float* dres) {
  const BlockOffsets& o = table_.blocks[size_t(layer)];
  Workspace& w = *ws_;
  const int64_t N = w.shape.N, C = config_.d_model, F = config_.ffn_hidden;
  const BranchNorm norm{o.norm2, a.n2, a.rstd2};

  const WeightRef dm16 = branch_norm_out_backward(P, G, norm, dres, a.m, w.dm.data(), w.dy16.data());
  linear_backward(w.ds.data(), G(o.w_down), dm16, {a.s, a.s16}, P.matrix(o.w_down), N, C, F, false);
  // dg and du, rounded as they are written, side by side in w.dy16 (which the workspace sizes for both).
  bf16* const dg16 = w.dy16.data();
  bf16* const du16 = dg16 ? dg16 + N * F : nullptr;
  be_.swiglu_backward(w.dg.data(), w.du.data(), dg16, du16, w.ds.data(), a.g, a.u, N * F);
  const WeightRef mlp_in{branch_input(norm, a.h), a.mlp_in16};
  const WeightRef dg{w.dg.data(), dg16}, du{w.du.data(), du16};
  linear_backward(w.dx_branch.data(), G(o.w_gate), dg, mlp_in, P.matrix(o.w_gate), N, F, C, false);
  linear_backward(w.dx_branch.data(), G(o.w_up), du, mlp_in, P.matrix(o.w_up), N, F, C, true);
  branch_norm_in_backward(P, G, norm, dres, w.dx_branch.data(), a.h);
}

void Transformer::block_forward(const GroupWeights& P, int64_t layer, const float* x, float* out, const BlockActs& a,
                          bool recompute) {
  attention_branch_forward(P, layer, x, a, recompute);
  mlp_branch_forward(P, layer, out, a, recompute);
}

// On entry dres = d(loss)/d(block output); on exit d(loss)/d(block input x). Each output gradient dy is rounded
// once (bf16) into w.dy16 for its two products, input and weight gradient, which therefore run one after the
// other; the inputs' rounded copies come from the forward pass.
void Transformer::block_backward(const GroupWeights& P, const GroupGrads& G, int64_t layer, const float* x,
                                 const BlockActs& a, float* dres) {
  mlp_branch_backward(P, G, layer, a, dres);
  attention_branch_backward(P, G, layer, x, a, dres);
}

void Transformer::forward_blocks(WeightSource& weights, const int32_t* ids) {
  Workspace& w = *ws_;
  const int64_t N = w.shape.N, C = config_.d_model;
  check_ids(ids, N);
  const ParamTable::Range embed_range = table_.embed_range();
  // The lookup reads fp32 rows: the embedding's bf16 copy, if any, is the tied LM head's (acquired again there).
  be_.embedding_forward(w.resid[0].data(), ids, weights.acquire(embed_range, Precision::fp32)(table_.embed), N, C);
  weights.release(embed_range);
  for (int64_t l = 0; l < config_.n_layers; l++) {
    const ParamTable::Range range = table_.block_range(size_t(l));
    block_forward(acquire(weights, range), l, w.resid[size_t(l)].data(), w.resid[size_t(l + 1)].data(),
                  w.block(l));
    weights.release(range);
  }
}

void Transformer::final_norm(const GroupWeights& head) {
  Workspace& w = *ws_;
  be_.rmsnorm_forward(w.final_out.data(), w.final_rstd.data(), w.resid.back().data(), head(table_.final_norm),
                      w.shape.N, config_.d_model, eps());
}

WeightRef Transformer::lm_head_weights(WeightSource& weights, const GroupWeights& head) {
  return (table_.tied() ? acquire(weights, table_.embed_range()) : head).matrix(table_.lm_head);
}

LossSums Transformer::head_loss(WeightSource& weights, const GroupWeights& head, const int32_t* targets, float z_coef,
                          const LmHeadGrads* grads) {
  const WeightRef lm_head = lm_head_weights(weights, head);
  final_norm(head);
  const LossSums sums = be_.lm_head_loss(ws_->final_out.data(), lm_head, targets, ws_->shape.N, config_.d_model,
                                         config_.vocab_size, z_coef, precision_, grads);
  if (table_.tied()) weights.release(table_.embed_range());
  return sums;
}

LossSums Transformer::forward_backward(const float* P, float* grads, const MicroBatch& batch, float z_coef,
                                       float grad_scale) {
  WholeGradient sink(grads);
  return forward_backward(whole_weights(P), sink, batch, z_coef, grad_scale);
}

LossSums Transformer::forward_backward(WeightSource& weights, GradientSink& sink, const MicroBatch& batch, float z_coef,
                                 float grad_scale) {
  prepare(batch.B, batch.T, true, batch.doc_offsets, batch.context);
  Workspace& w = *ws_;
  const ModelConfig& c = config_;
  const int64_t N = batch.B * batch.T, C = c.d_model;
  forward_blocks(weights, batch.ids);

  // Head: final norm, LM head and loss, and their backward.
  auto open = [&](ParamTable::Range r) { return GroupGrads{sink.open(r), r.begin}; };
  const ParamTable::Range embed_range = table_.embed_range(), head_range = table_.head_range();
  GroupGrads embed = table_.tied() ? open(embed_range) : GroupGrads{};
  const GroupGrads head = open(head_range);
  const GroupWeights head_w = acquire(weights, head_range);
  const LmHeadGrads head_grads{w.dfinal.data(), (table_.tied() ? embed : head)(table_.lm_head), grad_scale};
  const LossSums sums = head_loss(weights, head_w, batch.targets, z_coef, &head_grads);
  be_.rmsnorm_backward(w.dres.data(), nullptr, head(table_.final_norm), w.dfinal.data(), w.resid.back().data(),
                       head_w(table_.final_norm), w.final_rstd.data(), N, C, false);
  weights.release(head_range);
  sink.close(head_range);

  for (int64_t l = c.n_layers - 1; l >= 0; l--) {
    const BlockActs a = w.block(l);
    const ParamTable::Range range = table_.block_range(size_t(l));
    const GroupWeights block_w = acquire(weights, range);
    // Recompute what was not kept of this block's activations; its output (already in resid[l + 1]) is rewritten
    // identically.
    if (w.shape.recomputes())
      block_forward(block_w, l, w.resid[size_t(l)].data(), w.resid[size_t(l + 1)].data(), a, true);
    block_backward(block_w, open(range), l, w.resid[size_t(l)].data(), a, w.dres.data());
    weights.release(range);
    sink.close(range);
  }
  if (!table_.tied()) embed = open(embed_range);
  be_.embedding_backward(embed(table_.embed), batch.ids, w.dres.data(), N, C);
  sink.close(embed_range);
  return sums;
}

LossSums Transformer::forward_loss(const float* P, const MicroBatch& batch, float z_coef) {
  return forward_loss(whole_weights(P), batch, z_coef);
}

LossSums Transformer::forward_loss(WeightSource& weights, const MicroBatch& batch, float z_coef) {
  prepare(batch.B, batch.T, false, batch.doc_offsets, batch.context);
  forward_blocks(weights, batch.ids);
  const ParamTable::Range head_range = table_.head_range();
  const LossSums sums = head_loss(weights, acquire(weights, head_range), batch.targets, z_coef, nullptr);
  weights.release(head_range);
  return sums;
}

void Transformer::forward_hidden(WeightSource& weights, const int32_t* ids, int64_t B, int64_t T,
                                 ContextAttention* context) {
  prepare(B, T, false, {}, context);
  forward_blocks(weights, ids);
  final_norm(acquire(weights, table_.head_range()));
  weights.release(table_.head_range());
}

void Transformer::head_logits(WeightSource& weights, const int64_t* rows, int64_t n, float* logits) {
  check(ws_ != nullptr, "head_logits: call forward_hidden first");
  Workspace& w = *ws_;
  const int64_t C = config_.d_model, V = config_.vocab_size;
  if (w.head_rows.size() < size_t(n * C)) w.head_rows = Buffer(be_, size_t(n * C));
  for (int64_t i = 0; i < n; i++) {
    check(rows[i] >= 0 && rows[i] < w.shape.N, "head_logits: row {} is outside the {} positions", rows[i], w.shape.N);
    be_.copy(w.head_rows.data() + i * C, w.final_out.data() + rows[i] * C, size_t(C));
  }
  const size_t n_logits = size_t(n * V);
  if (!be_.host_memory() && w.head_logits.size() < n_logits) w.head_logits = Buffer(be_, n_logits);
  float* out = be_.host_memory() ? logits : w.head_logits.data();
  const ParamTable::Range lm_head_range = table_.lm_head_range();
  const WeightRef lm_head = acquire(weights, lm_head_range).matrix(table_.lm_head);
  be_.linear_forward(out, w.head_rows.data(), lm_head, n, V, C, precision_);
  weights.release(lm_head_range);
  if (!be_.host_memory()) be_.to_host(logits, out, n_logits * sizeof(float));
}

void Transformer::forward_logits(const float* P, const int32_t* ids, int64_t B, int64_t T, float* logits) {
  WeightSource& weights = whole_weights(P);
  forward_hidden(weights, ids, B, T);
  std::vector<int64_t> rows(size_t(B * T));
  for (int64_t i = 0; i < B * T; i++) rows[size_t(i)] = i;
  head_logits(weights, rows.data(), B * T, logits);
}

}  // namespace replica::model
