// generate(): prefill, then sample and feed back one token at a time, timing both phases.
#include "replica/model/generation.h"

#include <algorithm>
#include <chrono>

#include "replica/core/error.h"

namespace replica::model {

int64_t generation_positions(int64_t prompt_tokens, int64_t max_new_tokens) {
  return prompt_tokens + std::max<int64_t>(max_new_tokens - 1, 0);
}

GenerationResult generate(Decoder& decoder, std::span<const int32_t> prompt, const GenerationConfig& config,
                          const std::function<void(int32_t)>& on_token) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  check(!prompt.empty(), "generation needs a prompt of at least one token");
  check(decoder.position() == 0, "generation needs a fresh decoder ({} positions already appended)",
        decoder.position());
  check(config.max_new_tokens >= 0, "max_new_tokens must be ≥ 0, got {}", config.max_new_tokens);
  Sampler sampler(config.sampling);
  const int64_t V = decoder.config().vocab_size;
  const size_t candidates = size_t(config.vocab_limit > 0 ? std::min(config.vocab_limit, V) : V);

  GenerationResult result;
  if (config.max_new_tokens == 0) return result;
  auto start = Clock::now();
  std::span<const float> logits = decoder.append(prompt);
  result.prefill_seconds = seconds_since(start);
  start = Clock::now();
  while (true) {
    const int32_t id = sampler.next(logits.first(candidates));
    result.ids.push_back(id);
    if (on_token) on_token(id);
    result.stopped_at_eos = config.eos && id == *config.eos;
    if (result.stopped_at_eos || int64_t(result.ids.size()) == config.max_new_tokens) break;
    logits = decoder.append(std::span<const int32_t>(&result.ids.back(), 1));
  }
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace replica::model
