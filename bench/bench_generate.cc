// Generation throughput of a model config on a device: a prefill of PROMPT random ids, then NEW tokens one at a time
// through the KV cache (model/decoder.h), greedy, as `replica generate` runs them (weights: init_params seed 0).
// Usage: bench_generate MODEL.yaml PROMPT NEW fp32|bf16 [cpu|cuda] [REPEATS]                        → one JSON line
// The line has the prefill's seconds, the decode tokens/s (the median of REPEATS generations, default 3) and a
// checksum of every logit the first generation saw (FNV-1a over their bits) with its ids, so that two builds can be
// compared for speed and for bit-identical outputs.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <random>
#include <vector>

#include "replica/core/threads.h"
#include "replica/model/decoder.h"

using namespace replica;

namespace {

struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  }
};

struct Timing {
  double prefill_s = 0, decode_s = 0;
  uint64_t checksum = 0;
  std::vector<int32_t> ids;
};

Timing generate_once(const model::ModelConfig& config, const float* weights, Precision precision,
                     const std::vector<int32_t>& prompt, int64_t new_tokens, Backend& backend) {
  using Clock = std::chrono::steady_clock;
  const int64_t V = config.vocab_size, candidates = std::min<int64_t>(V, 100278);
  model::Decoder decoder(config, weights, precision, int64_t(prompt.size()) + new_tokens, backend);
  Timing t;
  Fnv fnv;
  auto start = Clock::now();
  std::span<const float> logits = decoder.append(prompt);
  t.prefill_s = std::chrono::duration<double>(Clock::now() - start).count();
  start = Clock::now();
  for (int64_t i = 0; i < new_tokens; i++) {
    fnv.add(logits.data(), logits.size_bytes());
    const int32_t id = int32_t(std::max_element(logits.begin(), logits.begin() + candidates) - logits.begin());
    t.ids.push_back(id);
    logits = decoder.append(std::span<const int32_t>(&id, 1));
  }
  fnv.add(logits.data(), logits.size_bytes());
  t.decode_s = std::chrono::duration<double>(Clock::now() - start).count();
  t.checksum = fnv.h;
  return t;
}

int run(int argc, char** argv) {
  if (argc < 5) {
    fmt::print(stderr, "usage: bench_generate MODEL.yaml PROMPT NEW fp32|bf16 [cpu|cuda] [REPEATS]\n");
    return 2;
  }
  const model::ModelConfig config = model::load_model_config(argv[1]);
  const int64_t prompt_tokens = std::stoll(argv[2]), new_tokens = std::stoll(argv[3]);
  const Precision precision = parse_precision(argv[4]);
  const Device device = parse_device(argc > 5 ? argv[5] : "cpu");
  const int repeats = argc > 6 ? std::stoi(argv[6]) : 3;
  set_num_threads(0);
  Backend& backend = backend_for(device);

  const model::ParamTable table(config);
  std::vector<float> host(table.total());
  model::init_params(config, table, 0, host.data());
  const OnBackend weights(backend, host);
  std::mt19937 rng(0);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  for (int32_t& id : prompt) id = int32_t(rng() % uint32_t(std::min<int64_t>(config.vocab_size, 100278)));

  std::vector<Timing> runs;
  for (int r = 0; r < repeats; r++)
    runs.push_back(generate_once(config, weights.data(), precision, prompt, new_tokens, backend));
  for (const Timing& t : runs)
    if (t.checksum != runs[0].checksum) throw std::runtime_error("a repeat gave other logits");
  std::vector<double> decode;
  for (const Timing& t : runs) decode.push_back(t.decode_s);
  std::sort(decode.begin(), decode.end());
  const double median = decode[decode.size() / 2];
  std::string ids;
  for (int32_t id : runs[0].ids) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  fmt::print("{{\"model\": \"{}\", \"device\": \"{}\", \"threads\": {}, \"precision\": \"{}\", \"prompt\": {}, "
             "\"new\": {}, \"prefill_s\": {:.5f}, \"decode_tokens_per_s\": {:.2f}, \"checksum\": \"{:016x}\", "
             "\"ids\": \"{}\"}}\n",
             argv[1], backend.describe(), num_threads(), precision_name(precision), prompt_tokens, new_tokens,
             runs[0].prefill_s, double(new_tokens) / median, runs[0].checksum, ids);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_generate: error: {}\n", e.what());
    return 2;
  }
}
