// ModelConfig: the shape of an OLMo-3-family transformer, read from an HF config.json or a YAML model file
// (same keys: Olmo3Config's, plus replica's knobs for OLMo 2 / Llama-like variants).
//
// Shape letters used across model/ and kernels/:
//   B batch, T time (sequence), C channels (d_model), F MLP hidden, V vocab,
//   H query heads, K key/value heads (GQA when K < H), D head dim, W sliding window (keys per query).
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "replica/kernels/rope_table.h"

namespace replica::model {

enum class NormPlacement {
  reordered,  // OLMo 2/3: h = x + norm(sublayer(x))      (HF post_attention/post_feedforward_layernorm)
  pre,        // Llama:    h = x + sublayer(norm(x))      (HF input_layernorm/post_attention_layernorm)
};

// The longest context replica accepts: positions are int32 (2^31 - 1).
inline constexpr int64_t kMaxPositions = INT32_MAX;

struct ModelConfig {
  std::string model_type = "olmo3";  // olmo3 | olmo2 | llama (decides defaults and parameter names)
  int64_t vocab_size = 0;            // V, possibly padded (100,352 for OLMo 3 training)
  int64_t d_model = 0;               // C (hidden_size)
  int64_t ffn_hidden = 0;            // F (intermediate_size)
  int64_t n_layers = 0;
  int64_t n_heads = 0;     // H
  int64_t n_kv_heads = 0;  // K
  int64_t head_dim = 0;    // D
  double norm_eps = 1e-6;
  double rope_theta = 500000.0;
  // HF rope_scaling: YaRN on the full-attention layers (OLMo 3 stage 3); the sliding layers keep plain RoPE.
  std::optional<YarnScaling> rope_scaling;
  int64_t sliding_window = 0;  // W: on sliding layers query i sees keys j with i - W < j <= i
  std::vector<bool> sliding;   // per layer: true = sliding_attention, false = full_attention
  bool tie_embeddings = false;
  int64_t max_seq_len = 8192;  // max_position_embeddings
  NormPlacement norm_placement = NormPlacement::reordered;
  bool qk_norm = true;  // RMSNorm over the full q (H*D) and k (K*D) projection widths
  double init_std = 0.02;
  int64_t eos_token_id = 100257;
  int64_t pad_token_id = 100277;

  // Keys per query on `layer` (0 = unlimited, i.e. causal full attention).
  int64_t window(int64_t layer) const { return sliding[size_t(layer)] ? sliding_window : 0; }
  // Whether `layer` rotates with the YaRN table (a full-attention layer of a scaled model) or the plain one.
  bool yarn_layer(int64_t layer) const { return rope_scaling && !sliding[size_t(layer)]; }
  int64_t q_width() const { return n_heads * head_dim; }
  int64_t kv_width() const { return n_kv_heads * head_dim; }

  // Raises replica::Error naming `source` when the shape is impossible.
  void validate(const std::string& source) const;
  bool operator==(const ModelConfig&) const = default;
};

// Reads `path`: a .json file (HF config.json), a .yaml/.yml model file, or a directory holding config.json.
ModelConfig load_model_config(const std::string& path);
ModelConfig model_config_from_json(const nlohmann::json& j, const std::string& source);
// The HF Olmo3Config (or Olmo2/Llama) config.json for this model.
nlohmann::json model_config_to_hf_json(const ModelConfig& config);

}  // namespace replica::model
