// The decoder (KV-cache generation: the Transformer's one forward with the cache as its context attention) against
// the PyTorch reference fixtures: greedy decoding gives exactly the ids of the reference's full-recompute greedy loop
// (prompt + generation longer than the sliding windows), and the logits after each appended chunk equal the full
// forward's at that position. *Cuda: the same on the CUDA backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "reference_fixtures.h"
#include "replica/core/error.h"
#include "replica/model/generation.h"

namespace replica::model {
namespace {

class DecoderParity : public ::testing::TestWithParam<std::string> {};

// greedy.json: the reference's prompt and the ids its greedy loop appends.
struct GreedyGolden {
  std::vector<int32_t> prompt, ids;
  explicit GreedyGolden(const Case& c) {
    const nlohmann::json j = c.json("greedy.json");
    prompt = j["prompt"].get<std::vector<int32_t>>();
    ids = j["ids"].get<std::vector<int32_t>>();
  }
};

void check_greedy(const Case& c, Backend& backend) {
  const GreedyGolden golden(c);
  GenerationConfig config;
  config.max_new_tokens = int64_t(golden.ids.size());
  const OnBackend weights(backend, c.model.params);
  Decoder decoder(c.model.config, weights.data(), Precision::fp32,
                  generation_positions(int64_t(golden.prompt.size()), config.max_new_tokens), backend);
  std::vector<int32_t> streamed;
  const GenerationResult result = generate(decoder, golden.prompt, config, [&](int32_t id) { streamed.push_back(id); });
  EXPECT_EQ(result.ids, golden.ids) << c.dir;
  EXPECT_EQ(streamed, result.ids);
  EXPECT_FALSE(result.stopped_at_eos);
}

// Instance 0 of the fixture appended as a prompt of a third of it, then a chunk of 3 tokens, then one token at a
// time: after each call, the logits of its last position against the Transformer's full forward over the instance
// (and against the reference's golden logits) in `precision`, within `bound` of the largest logit.
void check_decoder_logits(const Case& c, Precision precision, const std::string& golden_file, double bound,
                          Backend& backend) {
  const int64_t T = c.T, V = c.model.config.vocab_size;
  const OnBackend weights(backend, c.model.params);
  Transformer model(c.model.config, precision, Remat::none, backend);
  std::vector<float> full(size_t(T * V));
  model.forward_logits(weights.data(), c.ids.data(), 1, T, full.data());
  const NpyArray golden = read_npy(c.dir + "/" + golden_file);

  Decoder decoder(c.model.config, weights.data(), precision, T, backend);
  std::vector<int64_t> chunks = {T / 3, 3};
  while (std::accumulate(chunks.begin(), chunks.end(), int64_t(0)) < T) chunks.push_back(1);
  for (int64_t n : chunks) {
    const int64_t first = decoder.position(), last = first + n - 1;
    const std::span<const float> logits = decoder.append(std::span<const int32_t>(c.ids.data() + first, size_t(n)));
    EXPECT_LE(max_relative_error(logits.data(), full.data() + last * V, size_t(V)), bound)
        << c.dir << " position " << last << " against the full forward";
    EXPECT_LE(max_relative_error(logits.data(), golden.as<float>() + last * V, size_t(V)), bound)
        << c.dir << " position " << last << " against " << golden_file;
  }
  EXPECT_EQ(decoder.position(), T);
}

TEST_P(DecoderParity, GreedyIdsEqualTheReferenceGreedyLoop) { check_greedy(Case(GetParam()), cpu_backend()); }

TEST_P(DecoderParity, LogitsEqualTheFullForwardFp32) {
  check_decoder_logits(Case(GetParam()), Precision::fp32, "logits_fp32.npy", 1e-5, cpu_backend());
}

// bf16 GEMMs in both: the same rounding of every operand, fp32 sums in other orders (one row against many).
TEST_P(DecoderParity, LogitsEqualTheFullForwardBf16) {
  check_decoder_logits(Case(GetParam()), Precision::bf16, "logits_bf16.npy", 2e-2, cpu_backend());
}

TEST_P(DecoderParity, GreedyIdsEqualTheReferenceGreedyLoopCuda) {
  SKIP_WITHOUT_CUDA();
  check_greedy(Case(GetParam()), backend_for(Device::cuda));
}

TEST_P(DecoderParity, LogitsEqualTheFullForwardFp32Cuda) {
  SKIP_WITHOUT_CUDA();
  check_decoder_logits(Case(GetParam()), Precision::fp32, "logits_fp32.npy", 1e-5, backend_for(Device::cuda));
}

INSTANTIATE_TEST_SUITE_P(Reference, DecoderParity, ::testing::ValuesIn(fixture_cases()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DecoderParity);

Case first_case() { return Case(fixture_cases().at(0)); }

TEST(Generation, StopsAfterTheEndOfSequenceToken) {
  const Case c = first_case();
  const GreedyGolden golden(c);
  GenerationConfig config;
  config.max_new_tokens = int64_t(golden.ids.size());
  config.eos = golden.ids[2];  // greedy reaches it at the first index it appears
  const auto stop = std::find(golden.ids.begin(), golden.ids.end(), *config.eos);
  Decoder decoder(c.model.config, c.model.params.data(), Precision::fp32, c.model.config.max_seq_len, cpu_backend());
  const GenerationResult result = generate(decoder, golden.prompt, config);
  EXPECT_TRUE(result.stopped_at_eos);
  EXPECT_EQ(result.ids, std::vector<int32_t>(golden.ids.begin(), stop + 1));
}

TEST(Generation, SamplingIsDeterministicForASeedAndDiffersAcrossSeeds) {
  const Case c = first_case();
  auto sample = [&](uint64_t seed) {
    GenerationConfig config;
    config.max_new_tokens = 30;
    config.sampling = {.temperature = 1.0, .top_k = 0, .top_p = 1.0, .seed = seed};
    Decoder decoder(c.model.config, c.model.params.data(), Precision::fp32, 60, cpu_backend());
    return generate(decoder, GreedyGolden(c).prompt, config).ids;
  };
  const std::vector<int32_t> first = sample(1);
  EXPECT_EQ(sample(1), first);
  EXPECT_NE(sample(2), first);
}

TEST(Generation, RefusesMorePositionsThanTheModelHas) {
  const Case c = first_case();
  EXPECT_THROW(
      Decoder(c.model.config, c.model.params.data(), Precision::fp32, c.model.config.max_seq_len + 1, cpu_backend()),
      Error);
  Decoder decoder(c.model.config, c.model.params.data(), Precision::fp32, 4, cpu_backend());
  const std::vector<int32_t> five(5, 1), bad = {int32_t(c.model.config.vocab_size)};
  EXPECT_THROW(decoder.append(five), Error);
  EXPECT_THROW(decoder.append(bad), Error);
}

}  // namespace
}  // namespace replica::model
