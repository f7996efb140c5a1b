// The generation loop: the prompt in one Decoder call (prefill), then one token at a time, each chosen by a
// Sampler from the logits after the last, until max_new_tokens or the end-of-sequence token.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "replica/model/decoder.h"
#include "replica/model/sampler.h"

namespace replica::model {

struct GenerationConfig {
  int64_t max_new_tokens = 64;
  std::optional<int32_t> eos;  // generation stops after this token (which is returned)
  // Tokens are chosen among ids below this (0: the whole vocabulary): a padded vocabulary's extra rows are no
  // tokens of the tokenizer.
  int64_t vocab_limit = 0;
  SamplingConfig sampling;
};

struct GenerationResult {
  std::vector<int32_t> ids;  // the new tokens
  bool stopped_at_eos = false;
  double prefill_seconds = 0.0, decode_seconds = 0.0;  // the prompt's Decoder call; the rest
};

// Positions a Decoder needs for `prompt_tokens` and up to `max_new_tokens` new ones (the last is never fed back).
int64_t generation_positions(int64_t prompt_tokens, int64_t max_new_tokens);

// Generates after `prompt` (non-empty) on a fresh decoder, calling on_token(id) for each new token as soon as it is
// chosen (streaming).
GenerationResult generate(Decoder& decoder, std::span<const int32_t> prompt, const GenerationConfig& config,
                          const std::function<void(int32_t)>& on_token = {});

}  // namespace replica::model
