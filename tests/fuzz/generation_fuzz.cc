// Fuzzes the generation settings (generate's --temperature, --top-k, --top-p, --seed, --max-new-tokens and the
// prompt length) and the sampler they configure, on logits from the fuzzer: settings are refused with
// replica::Error or accepted, the positions a generation needs are never negative, and an accepted sampler picks
// an id inside the logits.
#include <cmath>
#include <cstring>
#include <vector>

#include "fuzz_input.h"
#include "replica/model/generation.h"
#include "replica/model/sampler.h"

namespace {

template <typename T>
T take(const uint8_t*& data, size_t& size) {
  T value{};
  const size_t n = std::min(size, sizeof(T));
  if (n > 0) std::memcpy(&value, data, n);
  data += n, size -= n;
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  model::SamplingConfig config;
  config.temperature = take<double>(data, size);
  config.top_k = take<int64_t>(data, size);
  config.top_p = take<double>(data, size);
  config.seed = take<uint64_t>(data, size);
  const int64_t prompt = take<int64_t>(data, size), max_new = take<int64_t>(data, size);
  if (prompt > 0 && max_new >= 0 && model::generation_positions(prompt, max_new) < prompt)
    fuzz::property_failed("generation_positions wrapped below the prompt length");
  std::vector<float> logits(size / sizeof(float));
  if (!logits.empty()) std::memcpy(logits.data(), data, logits.size() * sizeof(float));
  for (float& x : logits)
    if (!std::isfinite(x)) x = 0.0f;  // generate() refuses non-finite logits before the sampler sees them
  fuzz::expect_only_replica_errors([&] {
    config.validate();
    if (logits.empty()) return;
    model::Sampler sampler(config);
    for (int draw = 0; draw < 3; draw++) {
      const int32_t id = sampler.next(logits);
      if (id < 0 || size_t(id) >= logits.size()) fuzz::property_failed("the sampler picked an id outside the logits");
    }
  });
  return 0;
}
