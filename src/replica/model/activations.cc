// The activation table: which buffers a micro-batch needs and how long each is, read by both the allocation and
// the byte count.
#include "replica/model/activations.h"

#include <algorithm>
#include <type_traits>

#include "replica/model/rope.h"

namespace replica::model {

Transformer::ActivationShape::ActivationShape(const ModelConfig& c, int64_t B, int64_t T, Remat remat, Precision precision,
                                        bool training, RopeRows rope, bool through_context)
    : B(B), T(T), N(B * T), rope(rope), C(size_t(c.d_model)), F(size_t(c.ffn_hidden)), HD(size_t(c.q_width())),
      KD(size_t(c.kv_width())), lse(size_t(B * c.n_heads * T)), layers(size_t(c.n_layers)),
      per_layer_gemms(training && (remat == Remat::none || remat == Remat::selective)),
      per_layer_attention(training && remat != Remat::block), per_layer_cheap(training && remat == Remat::none),
      rope_plain(0), rope_yarn(0), training(training),
      bf16(precision == Precision::bf16), pre_norm(c.norm_placement == NormPlacement::pre),
      attention_inputs16(bf16 && !through_context) {
  for (int64_t layer = 0; layer < c.n_layers; layer++)
    (c.yarn_layer(layer) ? rope_yarn : rope_plain) = size_t((rope.end - rope.first) * c.head_dim / 2);
}

bool Transformer::ActivationShape::serves(const ActivationShape& other) const {
  return B == other.B && T == other.T && rope.first == other.rope.first && rope.end == other.rope.end &&
         per_layer_gemms == other.per_layer_gemms &&
         per_layer_attention == other.per_layer_attention && per_layer_cheap == other.per_layer_cheap &&
         float8 == other.float8 && attention_inputs16 == other.attention_inputs16 && (training || !other.training);
}

template <typename Visit>
void Transformer::Workspace::each(Visit&& visit) {
  const size_t N = size_t(shape.N), C = shape.C, F = shape.F, HD = shape.HD, KD = shape.KD;
  resid.resize(shape.layers + 1);
  for (Buffer& b : resid) visit(b, N * C);
  gemms.resize(shape.sets(shape.per_layer_gemms));
  for (GemmOutputs& a : gemms) {
    visit(a.q, N * HD);
    for (Buffer* b : {&a.k, &a.v}) visit(*b, N * KD);
    for (Buffer* b : {&a.ao, &a.m}) visit(*b, N * C);
    for (Buffer* b : {&a.g, &a.u}) visit(*b, N * F);
  }
  attention.resize(shape.sets(shape.per_layer_attention));
  for (AttentionOutputs& a : attention) {
    visit(a.att, N * HD);
    visit(a.lse, shape.lse);
  }
  cheap.resize(shape.sets(shape.per_layer_cheap));
  for (CheapOutputs& a : cheap) {
    visit(a.qr, N * HD);
    visit(a.kr, N * KD);
    for (Buffer* b : {&a.rstd_q, &a.rstd_k, &a.rstd1, &a.rstd2}) visit(*b, N);
    visit(a.h, N * C);
    if (shape.pre_norm)
      for (Buffer* b : {&a.n1, &a.n2}) visit(*b, N * C);
    visit(a.s, N * F);
    if (shape.bf16) {
      for (Buffer16* b : {&a.attn_in16, &a.mlp_in16}) visit(*b, N * C);
      visit(a.att16, N * HD);
      visit(a.s16, N * F);
    }
    if (shape.attention_inputs16) {
      visit(a.qr16, N * HD);
      for (Buffer16* b : {&a.kr16, &a.v16}) visit(*b, N * KD);
    }
  }
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
  const RopeRows rows = shape.rope;  // of the tables of the whole sequence
  if (shape.rope_plain > 0) upload(backend, rope, make_rope_table(c, rows.end, false), rows.first);
  if (shape.rope_yarn > 0) upload(backend, yarn, make_rope_table(c, rows.end, true), rows.first);
}

size_t Transformer::Workspace::bytes(const ActivationShape& shape) {
  size_t total = 0;
  Workspace(shape).each([&](auto& buffer, size_t n) { total += n * sizeof(*buffer.data()); });
  return total;
}

Transformer::BlockActs Transformer::Workspace::block(int64_t layer) {
  auto pick = [&](auto& sets) -> auto& { return sets[sets.size() == 1 ? 0 : size_t(layer)]; };
  GemmOutputs& p = pick(gemms);
  AttentionOutputs& a = pick(attention);
  CheapOutputs& c = pick(cheap);
  return {p.q.data(), p.k.data(), p.v.data(), p.ao.data(), p.g.data(), p.u.data(), p.m.data(),
          a.att.data(), a.lse.data(),
          c.qr.data(), c.kr.data(), c.rstd_q.data(), c.rstd_k.data(), c.n1.data(), c.rstd1.data(), c.h.data(),
          c.s.data(), c.n2.data(), c.rstd2.data(),
          c.attn_in16.data(), c.att16.data(), c.mlp_in16.data(), c.s16.data(),
          c.qr16.data(), c.kr16.data(), c.v16.data()};
}

size_t Transformer::activation_bytes(const ModelConfig& config, Remat remat, int64_t B, int64_t T, Precision precision,
                                     bool context_parallel, bool float8) {
  ActivationShape shape(config, B, T, remat, precision, true, {0, T}, context_parallel);
  shape.float8 = float8;  // as prepare() sets it
  return Workspace::bytes(shape);
}

size_t Transformer::evaluation_activation_bytes(const ModelConfig& config, int64_t B, int64_t T, Precision precision) {
  return Workspace::bytes(ActivationShape(config, B, T, Remat::none, precision, false, {0, T}, false));
}

}  // namespace replica::model
