// generate(): prefill, then sample and feed back one token at a time, timing both phases.
#include "replica/model/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "replica/core/error.h"

namespace replica::model {

int64_t generation_positions(int64_t prompt_tokens, int64_t max_new_tokens) {
  const int64_t fed_back = std::max<int64_t>(max_new_tokens - 1, 0);
  int64_t positions = 0;
  // Saturates rather than wraps: a huge --max-new-tokens is then refused as "needs 2^63-1 positions", never a
  // negative count.
  if (__builtin_add_overflow(prompt_tokens, fed_back, &positions)) return std::numeric_limits<int64_t>::max();
  return positions;
}

// NaN or infinite logits come from weights that are not finite: every id would be "chosen" from garbage (greedy
// picks id 0), so generation stops, as forward and eval refuse the same model.
static void check_finite(std::span<const float> logits, int64_t position) {
  const auto bad = std::find_if(logits.begin(), logits.end(), [](float x) { return !std::isfinite(x); });
  check(bad == logits.end(),
        "the model's logits at position {} are not finite ({} at id {}): its weights hold NaN or Inf", position, *bad,
        bad - logits.begin());
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
  check_finite(logits, int64_t(prompt.size()) - 1);
  result.prefill_seconds = seconds_since(start);
  start = Clock::now();
  while (true) {
    const int32_t id = sampler.next(logits.first(candidates));
    result.ids.push_back(id);
    if (on_token) on_token(id);
    result.stopped_at_eos = config.eos && id == *config.eos;
    if (result.stopped_at_eos || int64_t(result.ids.size()) == config.max_new_tokens) break;
    logits = decoder.append(std::span<const int32_t>(&result.ids.back(), 1));
    check_finite(logits, decoder.position() - 1);
  }
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace replica::model
