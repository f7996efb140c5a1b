// Decoder: the Transformer's forward over the new rows through the KV cache, then the LM head of the last row.
#include "replica/model/decoder.h"

#include "replica/core/error.h"

namespace replica::model {

// max_positions, checked before anything is allocated for it.
static int64_t room(const ModelConfig& config, int64_t max_positions) {
  check(max_positions >= 1 && max_positions <= config.max_seq_len,
        "generation needs {} positions, the model has max_position_embeddings {}", max_positions, config.max_seq_len);
  return max_positions;
}

Decoder::Decoder(const ModelConfig& config, const float* weights, Precision precision, int64_t max_positions,
                 Backend& backend, AttentionKernel attention)
    : model_(config, precision, Remat::none, backend),
      weights_(backend, model_.table().total()),
      cache_(config, room(config, max_positions), backend),
      logits_(size_t(config.vocab_size)) {
  model_.use_attention(attention);
  weights_.set(weights);
}

std::span<const float> Decoder::append(std::span<const int32_t> ids) {
  const int64_t n = int64_t(ids.size()), V = config().vocab_size;
  check(n > 0, "append: no tokens");
  check(position() + n <= max_positions(), "the context is full: {} positions, {} appended, {} more asked for",
        max_positions(), position(), n);
  for (size_t i = 0; i < ids.size(); i++)
    check(ids[i] >= 0 && ids[i] < V, "token id {} at position {} is outside the vocabulary [0, {})", ids[i],
          position() + int64_t(i), V);
  model_.forward_hidden(weights_, ids.data(), 1, n, &cache_);
  cache_.advance(n);
  const int64_t last = n - 1;
  model_.head_logits(weights_, &last, 1, logits_.data());
  return logits_;
}

}  // namespace replica::model
