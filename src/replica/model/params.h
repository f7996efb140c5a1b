// ParamTable: every parameter's HF name, shape and offset in one flat fp32 buffer. Gradients and both
// Adam moments use the same table, so clipping, AdamW, sharding and checkpointing are one loop each.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "replica/model/config.h"

namespace replica::model {

enum class ParamKind { embedding, matrix, norm };

struct ParamEntry {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0;
  size_t numel = 0;
  ParamKind kind;
};

// Offsets of one transformer block's tensors in the flat buffer. For reordered norms (OLMo), norm1 is
// post_attention_layernorm and norm2 post_feedforward_layernorm; for pre-norm (Llama) norm1 is
// input_layernorm and norm2 post_attention_layernorm (the norm before the MLP). A tensor the model does not have
// (q_norm and k_norm without QK-norm) has no offset, so reading it fails instead of reading the embedding at 0.
struct BlockOffsets {
  size_t wq, wk, wv, wo;
  std::optional<size_t> q_norm, k_norm;
  size_t w_gate, w_up, w_down, norm1, norm2;
};

class ParamTable {
 public:
  explicit ParamTable(const ModelConfig& config);

  const std::vector<ParamEntry>& entries() const { return entries_; }
  size_t total() const { return total_; }  // buffer length (tensors are 16-float aligned)
  size_t count() const;                    // number of parameters
  const ParamEntry& at(const std::string& name) const;
  bool has(const std::string& name) const { return index_.count(name) != 0; }

  size_t embed = 0, final_norm = 0, lm_head = 0;  // lm_head == embed when tied
  std::vector<BlockOffsets> blocks;
  bool tied() const { return lm_head == embed; }

  // The model reads its weights and completes its gradient group by group: the embedding, each block, and the head
  // group (final norm and untied LM head). Each group is one contiguous range of the flat buffer, and together they
  // tile [0, total()).
  struct Range {
    size_t begin, end;
    bool operator==(const Range&) const = default;
  };
  Range embed_range() const { return {0, block_range(0).begin}; }
  Range block_range(size_t layer) const {
    return {layer < blocks.size() ? blocks[layer].wq : final_norm,
            layer + 1 < blocks.size() ? blocks[layer + 1].wq : final_norm};
  }
  Range head_range() const { return {final_norm, total_}; }
  Range lm_head_range() const { return tied() ? embed_range() : head_range(); }  // the group holding the LM head
  std::vector<Range> groups() const;  // all of them, in the backward's order
  size_t largest_group() const;       // floats

 private:
  size_t add(std::string name, std::vector<int64_t> shape, ParamKind kind);
  std::vector<ParamEntry> entries_;
  std::map<std::string, size_t> index_;
  size_t total_ = 0;
};

// OLMo-core initialisation: every matrix (embedding included) truncated normal (0, init_std, ±3σ),
// norms 1. A pure function of (seed, parameter name, element index): thread count does not matter.
void init_params(const ModelConfig& config, const ParamTable& table, uint64_t seed, float* params);

}  // namespace replica::model
