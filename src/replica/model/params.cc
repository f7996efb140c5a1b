// ParamTable layout (HF Olmo3 / Llama names) and OLMo-core style initialisation.
#include "replica/model/params.h"

#include <algorithm>

#include <fmt/format.h>

#include "replica/core/error.h"
#include "replica/core/rng.h"

#include <xxhash.h>

namespace replica::model {

size_t ParamTable::add(std::string name, std::vector<int64_t> shape, ParamKind kind) {
  size_t numel = 1;
  for (int64_t d : shape) numel *= size_t(d);
  // Each tensor starts on a 64-byte boundary so that kernels see aligned rows.
  total_ = (total_ + 15) / 16 * 16;
  index_[name] = entries_.size();
  entries_.push_back({std::move(name), std::move(shape), total_, numel, kind});
  total_ += numel;
  return entries_.back().offset;
}

ParamTable::ParamTable(const ModelConfig& c) {
  const int64_t C = c.d_model, F = c.ffn_hidden, V = c.vocab_size;
  embed = add("model.embed_tokens.weight", {V, C}, ParamKind::embedding);
  bool reordered = c.norm_placement == NormPlacement::reordered;
  for (int64_t i = 0; i < c.n_layers; i++) {
    std::string p = fmt::format("model.layers.{}.", i);
    BlockOffsets b{};
    b.wq = add(p + "self_attn.q_proj.weight", {c.q_width(), C}, ParamKind::matrix);
    b.wk = add(p + "self_attn.k_proj.weight", {c.kv_width(), C}, ParamKind::matrix);
    b.wv = add(p + "self_attn.v_proj.weight", {c.kv_width(), C}, ParamKind::matrix);
    b.wo = add(p + "self_attn.o_proj.weight", {C, c.q_width()}, ParamKind::matrix);
    if (c.qk_norm) {
      b.q_norm = add(p + "self_attn.q_norm.weight", {c.q_width()}, ParamKind::norm);
      b.k_norm = add(p + "self_attn.k_norm.weight", {c.kv_width()}, ParamKind::norm);
    }
    b.w_gate = add(p + "mlp.gate_proj.weight", {F, C}, ParamKind::matrix);
    b.w_up = add(p + "mlp.up_proj.weight", {F, C}, ParamKind::matrix);
    b.w_down = add(p + "mlp.down_proj.weight", {C, F}, ParamKind::matrix);
    b.norm1 = add(p + (reordered ? "post_attention_layernorm.weight" : "input_layernorm.weight"), {C}, ParamKind::norm);
    b.norm2 = add(p + (reordered ? "post_feedforward_layernorm.weight" : "post_attention_layernorm.weight"), {C},
                  ParamKind::norm);
    blocks.push_back(b);
  }
  final_norm = add("model.norm.weight", {C}, ParamKind::norm);
  lm_head = c.tie_embeddings ? embed : add("lm_head.weight", {V, C}, ParamKind::matrix);
  total_ = (total_ + 15) / 16 * 16;
}

std::vector<ParamTable::Range> ParamTable::groups() const {
  std::vector<Range> groups{head_range()};
  for (size_t l = blocks.size(); l-- > 0;) groups.push_back(block_range(l));
  groups.push_back(embed_range());
  return groups;
}

size_t ParamTable::largest_group() const {
  size_t largest = 0;
  for (Range g : groups()) largest = std::max(largest, g.end - g.begin);
  return largest;
}

size_t ParamTable::count() const {
  size_t n = 0;
  for (const ParamEntry& e : entries_) n += e.numel;
  return n;
}

const ParamEntry& ParamTable::at(const std::string& name) const {
  auto it = index_.find(name);
  check(it != index_.end(), "unknown parameter '{}'", name);
  return entries_[it->second];
}

void init_params(const ModelConfig& config, const ParamTable& table, uint64_t seed, float* params) {
  for (const ParamEntry& e : table.entries()) {
    float* p = params + e.offset;
    if (e.kind == ParamKind::norm) {
      for (size_t i = 0; i < e.numel; i++) p[i] = 1.0f;
      continue;
    }
    uint64_t stream = XXH3_64bits(e.name.data(), e.name.size());
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < e.numel; i++) p[i] = truncated_normal(seed, stream, i, config.init_std, 3.0);
  }
}

}  // namespace replica::model
