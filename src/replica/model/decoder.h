// Generation's forward pass: one sequence fed a few tokens at a time (the prompt, then each new token), every
// position's keys and values kept in a KvCache so that no position is computed twice. It is the Transformer's one
// forward (model/transformer.cc states the blocks) over the new rows, with the cache as its context attention
// (model/context_attention.h), on any Backend; only the last position's logits are computed.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/config.h"
#include "replica/model/kv_cache.h"
#include "replica/model/transformer.h"
#include "replica/model/weight_source.h"

namespace replica::model {

class Decoder {
 public:
  // `weights`: ParamTable(config).total() floats of backend memory, unchanged while the decoder lives. Room for
  // positions 0 … max_positions − 1, at most the model's max_position_embeddings (else replica::Error). `attention`:
  // the model's attention kernel (Transformer::use_attention; the cache's attention is fp32 whatever it is).
  Decoder(const ModelConfig& config, const float* weights, Precision precision, int64_t max_positions,
          Backend& backend, AttentionKernel attention = AttentionKernel::automatic);

  // Runs `ids` at the next positions, keeps their keys and values, and returns the logits [V] after the last of
  // them (host memory, valid until the next call). Ids outside the vocabulary, or more than the room left, are a
  // replica::Error.
  std::span<const float> append(std::span<const int32_t> ids);

  int64_t position() const { return cache_.position(); }  // tokens appended so far
  int64_t max_positions() const { return cache_.max_positions(); }
  const KvCache& cache() const { return cache_; }
  const ModelConfig& config() const { return model_.config(); }

 private:
  Transformer model_;
  WholeWeights weights_;  // set once: the bf16 copy is rounded at the first call and kept
  KvCache cache_;
  std::vector<float> logits_;
};

}  // namespace replica::model
