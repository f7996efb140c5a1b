// The activation table: which buffers a micro-batch needs and how long each is, read by both the allocation and
// the byte count.
#include "replica/model/activations.h"

#include <algorithm>
#include <type_traits>

#include "replica/model/rope.h"

namespace replica::model {

Transformer::ActivationShape::ActivationShape(const ModelConfig& c, int64_t B, int64_t T, Remat remat, Precision precision,
                                        bool training, int64_t position)
    : B(B), T(T), N(B * T), position(position), C(size_t(c.d_model)), F(size_t(c.ffn_hidden)), HD(size_t(c.q_width())),
      KD(size_t(c.kv_width())), lse(size_t(B * c.n_heads * T)), layers(size_t(c.n_layers)),
      block_acts(training && remat == Remat::none ? layers : 1),
      kept_attention(training && remat == Remat::keep_attention ? layers : 0), rope_plain(0), rope_yarn(0),
      training(training),
      bf16(precision == Precision::bf16), pre_norm(c.norm_placement == NormPlacement::pre) {
  for (int64_t layer = 0; layer < c.n_layers; layer++)
    (c.yarn_layer(layer) ? rope_yarn : rope_plain) = size_t(T * c.head_dim / 2);
}

bool Transformer::ActivationShape::serves(const ActivationShape& other) const {
  return B == other.B && T == other.T && position == other.position && block_acts == other.block_acts && kept_attention == other.kept_attention &&
         float8 == other.float8 && (training || !other.training);
}

template <typename Visit>
void Transformer::BlockActs::each(const ActivationShape& shape, Visit&& visit) {
  const size_t N = size_t(shape.N);
  for (Buffer* b : {&q, &qr}) visit(*b, N * shape.HD);
  for (Buffer* b : {&k, &v, &kr}) visit(*b, N * shape.KD);
  for (Buffer* b : {&rstd_q, &rstd_k, &rstd1, &rstd2}) visit(*b, N);
  if (shape.kept_attention == 0) {  // else the workspace keeps them per layer
    visit(att, N * shape.HD);
    visit(lse, shape.lse);
  }
  for (Buffer* b : {&ao, &h, &m}) visit(*b, N * shape.C);
  if (shape.pre_norm)
    for (Buffer* b : {&n1, &n2}) visit(*b, N * shape.C);
  for (Buffer* b : {&g, &u, &s}) visit(*b, N * shape.F);
  if (!shape.bf16) return;
  for (Buffer16* b : {&attn_in16, &mlp_in16}) visit(*b, N * shape.C);
  visit(att16, N * shape.HD);
  visit(s16, N * shape.F);
}

template <typename Visit>
void Transformer::Workspace::each(Visit&& visit) {
  const size_t N = size_t(shape.N), C = shape.C, F = shape.F, HD = shape.HD, KD = shape.KD;
  resid.resize(shape.layers + 1);
  for (Buffer& b : resid) visit(b, N * C);
  acts.resize(shape.block_acts);
  for (BlockActs& a : acts) a.each(shape, visit);
  kept_att.resize(shape.kept_attention);
  kept_lse.resize(shape.kept_attention);
  for (Buffer& b : kept_att) visit(b, N * HD);
  for (Buffer& b : kept_lse) visit(b, shape.lse);
  visit(final_out, N * C);
  visit(final_rstd, N);
  for (Buffer* b : {&rope.cos, &rope.sin}) visit(*b, shape.rope_plain);
  for (Buffer* b : {&yarn.cos, &yarn.sin}) visit(*b, shape.rope_yarn);
  if (shape.float8) {
    const size_t widest = std::max({C, F, HD, KD});
    visit(f8_a, N * widest);
    visit(f8_b, std::max(N * widest, C * std::max({F, HD, KD})));
    visit(f8_scales, 2);
  }
  if (!shape.training) return;
  for (Buffer* b : {&dq, &dqr, &datt}) visit(*b, N * HD);
  for (Buffer* b : {&dk, &dv, &dkr}) visit(*b, N * KD);
  for (Buffer* b : {&dres, &dfinal, &dao, &dx_branch, &dm}) visit(*b, N * C);
  for (Buffer* b : {&dg, &du, &ds}) visit(*b, N * F);
  if (shape.bf16) visit(dy16, N * std::max({C, 2 * F, HD, KD}));
}

Transformer::Workspace::Workspace(Backend& backend, const ModelConfig& c, const ActivationShape& shape) : Workspace(shape) {
  each([&](auto& buffer, size_t n) { buffer = std::decay_t<decltype(buffer)>(backend, n); });
  const int64_t end = shape.position + shape.T;  // rows [position, end) of the tables of the whole sequence
  if (shape.rope_plain > 0) upload(backend, rope, make_rope_table(c, end, false), shape.position);
  if (shape.rope_yarn > 0) upload(backend, yarn, make_rope_table(c, end, true), shape.position);
}

size_t Transformer::Workspace::bytes(const ActivationShape& shape) {
  size_t total = 0;
  Workspace(shape).each([&](auto& buffer, size_t n) { total += n * sizeof(*buffer.data()); });
  return total;
}

size_t Transformer::activation_bytes(const ModelConfig& config, Remat remat, int64_t B, int64_t T, Precision precision) {
  return Workspace::bytes(ActivationShape(config, B, T, remat, precision, true));
}

}  // namespace replica::model
