// Decoder: embedding → blocks → final norm → LM head of the last row, for n new rows at positions p … p + n − 1.
// A block is the Transformer's two branches (reordered norms for OLMo 2/3, pre-norm for Llama):
//   attention: q, k, v projections → QK-norm → RoPE at the rows' positions → attention over the cache and the new
//              keys → the new keys and values into the cache → o_proj
//   MLP:       down_proj(silu(gate_proj x) · up_proj x)
#include "replica/model/decoder.h"

#include "replica/core/error.h"
#include "replica/model/rope.h"

namespace replica::model {

struct Decoder::Scratch {
  using Buffer = DeviceArray<float>;
  Scratch(Backend& be, const ModelConfig& c, int64_t rows)
      : rows(rows),
        x(be, size_t(rows * c.d_model)),
        normed(be, x.size()),
        sublayer(be, x.size()),
        q(be, size_t(rows * c.q_width())),
        qn(be, q.size()),
        att(be, q.size()),
        k(be, size_t(rows * c.kv_width())),
        kn(be, k.size()),
        v(be, k.size()),
        g(be, size_t(rows * c.ffn_hidden)),
        u(be, g.size()),
        s(be, g.size()),
        rstd(be, size_t(rows)),
        last(be, size_t(c.d_model)),
        logits(be, size_t(c.vocab_size)) {}
  int64_t rows;
  Buffer x;           // the residual stream [n, C]
  Buffer normed;      // a norm's output [n, C]
  Buffer sublayer;    // o_proj or down_proj output [n, C]
  Buffer q, qn, att;  // [n, H·D]: projection, after QK-norm and RoPE, attention output
  Buffer k, kn, v;    // [n, K·D]
  Buffer g, u, s;     // [n, F]
  Buffer rstd;        // [n], unused (no backward) but every norm writes it
  Buffer last;        // the final norm of the last row [C]
  Buffer logits;      // [V]
};

// max_positions, checked before anything is allocated for it.
static int64_t room(const ModelConfig& config, int64_t max_positions) {
  check(max_positions >= 1 && max_positions <= config.max_seq_len,
        "generation needs {} positions, the model has max_position_embeddings {}", max_positions, config.max_seq_len);
  return max_positions;
}

Decoder::Decoder(const ModelConfig& config, const float* weights, Precision precision, int64_t max_positions,
                 Backend& backend)
    : config_(config),
      table_(config_),
      precision_(precision),
      be_(backend),
      weights_(backend, table_.total()),
      cache_(config_, room(config_, max_positions), backend),
      logits_(size_t(config_.vocab_size)) {
  weights_.set(weights);
  bool plain = false, yarn = false;
  for (int64_t l = 0; l < config_.n_layers; l++) (config_.yarn_layer(l) ? yarn : plain) = true;
  const size_t n = size_t(max_positions * config_.head_dim / 2);
  for (auto [used, to, scaled] : {std::tuple{plain, &rope_, false}, std::tuple{yarn, &yarn_, true}}) {
    if (!used) continue;
    *to = {DeviceArray<float>(backend, n), DeviceArray<float>(backend, n)};
    upload(backend, *to, make_rope_table(config_, max_positions, scaled));
  }
}

Decoder::~Decoder() = default;

const float* Decoder::branch_input(const GroupWeights& P, size_t norm, const float* x, int64_t n) {
  if (config_.norm_placement == NormPlacement::reordered) return x;
  Scratch& w = *scratch_;
  be_.rmsnorm_forward(w.normed.data(), w.rstd.data(), x, P(norm), n, config_.d_model, float(config_.norm_eps));
  return w.normed.data();
}

void Decoder::branch_output(const GroupWeights& P, size_t norm, float* x, const float* sublayer, int64_t n) {
  Scratch& w = *scratch_;
  if (config_.norm_placement == NormPlacement::reordered)
    be_.rmsnorm_add_forward(x, nullptr, w.rstd.data(), x, sublayer, P(norm), n, config_.d_model,
                            float(config_.norm_eps));
  else
    be_.add(x, x, sublayer, n * config_.d_model);
}

void Decoder::block(const GroupWeights& P, int64_t layer, int64_t n) {
  const ModelConfig& c = config_;
  const BlockOffsets& o = table_.blocks[size_t(layer)];
  Scratch& w = *scratch_;
  const int64_t C = c.d_model, HD = c.q_width(), KD = c.kv_width(), F = c.ffn_hidden;
  const float eps = float(c.norm_eps);
  const Precision p = precision_;

  const float* attn_in = branch_input(P, o.norm1, w.x.data(), n);
  be_.linear_forward(w.q.data(), attn_in, P.matrix(o.wq), n, HD, C, p);
  be_.linear_forward(w.k.data(), attn_in, P.matrix(o.wk), n, KD, C, p);
  be_.linear_forward(w.v.data(), attn_in, P.matrix(o.wv), n, KD, C, p);
  // The new rows sit at positions position_ … position_ + n − 1: their table rows start there.
  const RopeBuffers& rope = c.yarn_layer(layer) ? yarn_ : rope_;
  const float* cos = rope.cos.data() + position_ * c.head_dim / 2;
  const float* sin = rope.sin.data() + position_ * c.head_dim / 2;
  if (c.qk_norm) {
    be_.rmsnorm_rope_forward(w.qn.data(), nullptr, w.rstd.data(), w.q.data(), P(o.q_norm.value()), cos, sin, 1, n,
                             c.n_heads, c.head_dim, eps);
    be_.rmsnorm_rope_forward(w.kn.data(), nullptr, w.rstd.data(), w.k.data(), P(o.k_norm.value()), cos, sin, 1, n,
                             c.n_kv_heads, c.head_dim, eps);
  } else {
    be_.copy(w.qn.data(), w.q.data(), size_t(n * HD));
    be_.copy(w.kn.data(), w.k.data(), size_t(n * KD));
    be_.rope_forward(w.qn.data(), cos, sin, 1, n, c.n_heads, c.head_dim);
    be_.rope_forward(w.kn.data(), cos, sin, 1, n, c.n_kv_heads, c.head_dim);
  }
  const KvCache::Layer& cached = cache_.layer(layer);
  const CachedAttentionShape shape{n, position_, c.n_heads, c.n_kv_heads, c.head_dim, c.window(layer), cached.capacity};
  be_.cached_attention(w.att.data(), w.qn.data(), w.kn.data(), w.v.data(), cached.k.data(), cached.v.data(), shape);
  // Stored after attention: in a ring, a new key may take the slot of one that an earlier new query still reads.
  cache_.store(layer, w.kn.data(), w.v.data(), position_, n);
  be_.linear_forward(w.sublayer.data(), w.att.data(), P.matrix(o.wo), n, C, HD, p);
  branch_output(P, o.norm1, w.x.data(), w.sublayer.data(), n);

  const float* mlp_in = branch_input(P, o.norm2, w.x.data(), n);
  be_.linear_forward(w.g.data(), mlp_in, P.matrix(o.w_gate), n, F, C, p);
  be_.linear_forward(w.u.data(), mlp_in, P.matrix(o.w_up), n, F, C, p);
  be_.swiglu_forward(w.s.data(), nullptr, w.g.data(), w.u.data(), n * F);
  be_.linear_forward(w.sublayer.data(), w.s.data(), P.matrix(o.w_down), n, C, F, p);
  branch_output(P, o.norm2, w.x.data(), w.sublayer.data(), n);
}

std::span<const float> Decoder::append(std::span<const int32_t> ids) {
  const ModelConfig& c = config_;
  const int64_t n = int64_t(ids.size()), C = c.d_model, V = c.vocab_size;
  check(n > 0, "append: no tokens");
  check(position_ + n <= max_positions(), "the context is full: {} positions, {} appended, {} more asked for",
        max_positions(), position_, n);
  for (size_t i = 0; i < ids.size(); i++)
    check(ids[i] >= 0 && ids[i] < V, "token id {} at position {} is outside the vocabulary [0, {})", ids[i],
          position_ + int64_t(i), V);
  if (!scratch_ || scratch_->rows < n) {
    scratch_.reset();  // the old buffers go before the new ones come
    scratch_ = std::make_unique<Scratch>(be_, c, n);
  }
  Scratch& w = *scratch_;

  const ParamTable::Range embed = table_.embed_range();
  be_.embedding_forward(w.x.data(), ids.data(), acquire(embed)(table_.embed), n, C);
  for (int64_t l = 0; l < c.n_layers; l++) block(acquire(table_.block_range(size_t(l))), l, n);
  const GroupWeights head = acquire(table_.head_range());
  be_.rmsnorm_forward(w.last.data(), w.rstd.data(), w.x.data() + (n - 1) * C, head(table_.final_norm), 1, C,
                      float(c.norm_eps));
  const WeightRef lm_head = acquire(table_.lm_head_range()).matrix(table_.lm_head);
  be_.linear_forward(w.logits.data(), w.last.data(), lm_head, 1, V, C, precision_);
  be_.to_host(logits_.data(), w.logits.data(), logits_.size() * sizeof(float));
  position_ += n;
  return logits_;
}

}  // namespace replica::model
