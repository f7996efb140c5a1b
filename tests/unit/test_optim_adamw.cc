// optim/adamw: OLMo-core's AdamW step against hand-computed values (decoupled weight decay, embedding
// excluded, bias corrections from the step count), padding untouched, thread-count independence.
#include <gtest/gtest.h>
#include <omp.h>

#include <random>
#include <utility>
#include <vector>

#include "optim_model.h"
#include "reference_fixtures.h"
#include "replica/model/params.h"
#include "replica/optim/adamw.h"

namespace replica::optim {
namespace {

struct Buffers {
  model::ParamTable table;
  std::vector<float> params, grads;
  explicit Buffers(const model::ModelConfig& c) : table(c), params(table.total(), 0.0f), grads(table.total(), 0.0f) {}
  size_t at(const std::string& name, size_t i) const { return table.at(name).offset + i; }
};

// Expected values: the update written out in double (Python, see the test comments), compared at fp32 precision.
TEST(AdamW, FirstStepIsSignLikeWithDecoupledDecayExceptEmbedding) {
  Buffers b(optim_test_model());
  size_t emb = b.at("model.embed_tokens.weight", 3), mat = b.at("model.layers.0.self_attn.q_proj.weight", 5),
         norm = b.at("model.norm.weight", 1), head = b.at("lm_head.weight", 2);
  b.params[emb] = 0.5f, b.grads[emb] = 0.2f;
  b.params[mat] = 0.5f, b.grads[mat] = 0.2f;
  b.params[norm] = 1.0f, b.grads[norm] = -0.3f;
  b.params[head] = -0.25f;  // zero gradient: only weight decay moves it
  AdamW adam(b.table, AdamWConfig{0.9, 0.95, 1e-8, 0.1}, cpu_backend());
  adam.step(b.params.data(), b.grads.data(), 0.01);
  EXPECT_EQ(adam.step_count(), 1);
  // p·(1 - lr·wd) - lr·g/(|g| + eps): m/bc1 = g and sqrt(v/bc2) = |g| on the first step.
  EXPECT_FLOAT_EQ(b.params[mat], 0.4895000005f);
  EXPECT_FLOAT_EQ(b.params[emb], 0.4900000005f);         // no weight decay on the embedding
  EXPECT_FLOAT_EQ(b.params[norm], 1.0089999996666668f);  // norms are decayed (OLMo 3 excludes only embeddings)
  EXPECT_FLOAT_EQ(b.params[head], -0.25f * (1 - 0.01f * 0.1f));
  EXPECT_FLOAT_EQ(adam.exp_avg()[mat], 0.02f);
  EXPECT_FLOAT_EQ(adam.exp_avg_sq()[mat], 0.002f);
  EXPECT_FLOAT_EQ(adam.exp_avg()[norm], -0.03f);
  EXPECT_FLOAT_EQ(adam.exp_avg_sq()[norm], 0.0045f);
}

TEST(AdamW, SecondStepUsesStepCountForBiasCorrection) {
  Buffers b(optim_test_model());
  size_t emb = b.at("model.embed_tokens.weight", 0), mat = b.at("model.layers.0.mlp.down_proj.weight", 7),
         head = b.at("lm_head.weight", 0);
  b.params[emb] = 0.5f, b.params[mat] = 0.5f, b.params[head] = -0.25f;
  AdamW adam(b.table, AdamWConfig{0.9, 0.95, 1e-8, 0.1}, cpu_backend());
  b.grads[emb] = 0.2f, b.grads[mat] = 0.2f;
  adam.step(b.params.data(), b.grads.data(), 0.01);
  b.grads[emb] = -0.1f, b.grads[mat] = -0.1f;
  adam.step(b.params.data(), b.grads.data(), 0.005);
  EXPECT_EQ(adam.step_count(), 2);
  // m = 0.9·0.02 - 0.01 = 0.008, v = 0.95·0.002 + 0.05·0.01 = 0.0024, bc1 = 0.19, bc2 = 0.0975.
  EXPECT_FLOAT_EQ(adam.exp_avg()[mat], 0.008f);
  EXPECT_FLOAT_EQ(adam.exp_avg_sq()[mat], 0.0024f);
  EXPECT_FLOAT_EQ(b.params[mat], 0.48791340334485717f);
  EXPECT_FLOAT_EQ(b.params[emb], 0.48865815334510715f);
  EXPECT_FLOAT_EQ(b.params[head], -0.249625125f);  // (1 - 0.001)(1 - 0.0005)·(-0.25)
}

// A gradient scale (the clipping coefficient) multiplies each gradient as AdamW reads it: the weights and moments of
// scaling the gradient first, bit for bit, over steps with and without one.
TEST(AdamW, AGradScaleHasTheBitsOfScalingTheGradientFirst) {
  Buffers b(optim_test_model());
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& p : b.params) p = dist(rng);
  std::vector<float> folded = b.params, scaled_first = b.params;
  AdamW with_scale(b.table, AdamWConfig{}, cpu_backend()), on_scaled(b.table, AdamWConfig{}, cpu_backend());
  for (float scale : {0.37f, 1.0f, 0.0123f}) {
    std::vector<float> g(b.table.total());
    for (float& x : g) x = dist(rng) * 1e-2f;
    with_scale.step(folded.data(), g.data(), 1e-3, false, scale);
    for (float& x : g) x *= scale;
    on_scaled.step(scaled_first.data(), g.data(), 1e-3);
  }
  EXPECT_EQ(folded, scaled_first);
  const size_t n = with_scale.size();
  EXPECT_TRUE(std::equal(with_scale.exp_avg(), with_scale.exp_avg() + n, on_scaled.exp_avg()));
  EXPECT_TRUE(std::equal(with_scale.exp_avg_sq(), with_scale.exp_avg_sq() + n, on_scaled.exp_avg_sq()));
}

TEST(AdamW, PaddingBetweenTensorsIsUntouched) {
  Buffers b(optim_test_model());
  // model.norm.weight has 4 elements; the 12 floats after it (to the 16-float boundary) are padding.
  const model::ParamEntry& norm = b.table.at("model.norm.weight");
  size_t pad = norm.offset + norm.numel;
  ASSERT_LT(pad, b.table.at("lm_head.weight").offset);
  b.params[pad] = 7.0f;
  b.grads[pad] = 1.0f;
  for (size_t i = 0; i < norm.numel; i++) b.grads[norm.offset + i] = 0.5f;
  AdamW adam(b.table, AdamWConfig{}, cpu_backend());
  adam.step(b.params.data(), b.grads.data(), 1e-3);
  EXPECT_EQ(b.params[pad], 7.0f);
  EXPECT_EQ(adam.exp_avg()[pad], 0.0f);
  EXPECT_EQ(adam.exp_avg_sq()[pad], 0.0f);
}

TEST(AdamW, SameBitsForAnyThreadCount) {
  model::ModelConfig c = optim_test_model();
  c.vocab_size = 50000;  // enough elements for several parallel chunks
  Buffers b(c);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& p : b.params) p = dist(rng);
  std::vector<std::vector<float>> grads(3, std::vector<float>(b.table.total()));
  for (auto& g : grads)
    for (float& x : g) x = dist(rng) * 1e-2f;
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<float> params = b.params;
    AdamW adam(b.table, AdamWConfig{}, cpu_backend());
    for (const auto& g : grads) adam.step(params.data(), g.data(), 1e-3);
    results.push_back(params);
  }
  omp_set_num_threads(omp_get_num_procs());
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

// Random weights and gradients of a model with a 5,000-token vocabulary, and one AdamW step over the whole buffer.
struct WholeStep {
  Buffers b;
  std::vector<float> whole;  // the weights after the step
  AdamW full;
  explicit WholeStep(uint32_t seed) : b(vocab_5000()), full(b.table, AdamWConfig{}, cpu_backend()) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& p : b.params) p = dist(rng);
    for (float& g : b.grads) g = dist(rng) * 1e-2f;
    whole = b.params;
    full.step(whole.data(), b.grads.data(), 1e-2);
  }
  static model::ModelConfig vocab_5000() {
    model::ModelConfig c = optim_test_model();
    c.vocab_size = 5000;
    return c;
  }
};

TEST(AdamW, ShardsUpdateExactlyTheirRangeAsTheWholeBufferWould) {
  // A shard: AdamW over [begin, end), from that range's gradient, gives the same bits there as AdamW over the
  // whole buffer, touches nothing outside, and keeps moments for the range only (the embedding's no-decay rule
  // still applies).
  WholeStep ws(3);
  const Buffers& b = ws.b;
  const std::vector<float>& whole = ws.whole;
  const AdamW& full = ws.full;
  const size_t split = b.table.at("model.embed_tokens.weight").numel - 100;  // inside the embedding
  std::vector<float> sharded = b.params;
  for (auto [begin, end] : {std::pair<size_t, size_t>{0, split}, {split, b.table.total()}}) {
    AdamW shard(b.table, AdamWConfig{}, {{begin, end, 0}}, cpu_backend()),
        same_shard(b.table, AdamWConfig{}, {{begin, end, 0}}, cpu_backend());
    std::vector<float> alone = b.params;
    const std::vector<float> shard_grads(b.grads.begin() + ptrdiff_t(begin), b.grads.begin() + ptrdiff_t(end));
    shard.step(alone.data() + begin, shard_grads.data(), 1e-2);
    same_shard.step(sharded.data() + begin, shard_grads.data(), 1e-2);
    ASSERT_EQ(shard.size(), end - begin);
    for (size_t i = 0; i < b.params.size(); i++)
      ASSERT_EQ(alone[i], i >= begin && i < end ? whole[i] : b.params[i]) << i;
    for (size_t i = begin; i < end; i++) ASSERT_EQ(shard.exp_avg_sq()[i - begin], full.exp_avg_sq()[i]) << i;
  }
  EXPECT_EQ(sharded, whole);
}

TEST(AdamW, AShardOfSeveralPartsStoresThemOneAfterTheOther) {
  // Two parts of the flat buffer, stored one after the other in the shard's arrays; weights read from the whole
  // buffer (whole_params) or from the shard's own copy give the bits of AdamW over the whole buffer.
  WholeStep ws(4);
  const Buffers& b = ws.b;
  const std::vector<float>& whole = ws.whole;
  const AdamW& full = ws.full;
  const size_t n = b.table.total(), a0 = 100, a1 = n / 3, b0 = n / 2, b1 = n - 7;
  const std::vector<AdamW::Part> parts{{a0, a1, 0}, {b0, b1, a1 - a0}};
  std::vector<float> grads, shard_params;
  for (const AdamW::Part& p : parts) {
    grads.insert(grads.end(), b.grads.begin() + ptrdiff_t(p.begin), b.grads.begin() + ptrdiff_t(p.end));
    shard_params.insert(shard_params.end(), b.params.begin() + ptrdiff_t(p.begin), b.params.begin() + ptrdiff_t(p.end));
  }
  AdamW in_place(b.table, AdamWConfig{}, parts, cpu_backend()), on_shard(b.table, AdamWConfig{}, parts, cpu_backend());
  std::vector<float> params = b.params;
  in_place.step(params.data(), grads.data(), 1e-2, true);
  on_shard.step(shard_params.data(), grads.data(), 1e-2);
  ASSERT_EQ(in_place.size(), grads.size());
  for (size_t i = 0; i < n; i++) {
    const bool inside = (i >= a0 && i < a1) || (i >= b0 && i < b1);
    ASSERT_EQ(params[i], inside ? whole[i] : b.params[i]) << i;
  }
  for (const AdamW::Part& p : parts)
    for (size_t i = p.begin; i < p.end; i++) {
      ASSERT_EQ(shard_params[p.offset + i - p.begin], whole[i]) << i;
      ASSERT_EQ(in_place.exp_avg()[p.offset + i - p.begin], full.exp_avg()[i]) << i;
    }
}

// optim.host_moments moves the moments, not the numbers: on `backend`, two parts of a shard stepped three times with
// the moments in host memory give the weights and moments of the moments in backend memory, and state saved from
// one and loaded into the other steps on the same. The weights and gradient stay in backend memory.
void check_host_moments(Backend& backend) {
  WholeStep ws(5);
  const Buffers& b = ws.b;
  const size_t n = b.table.total();
  const std::vector<AdamW::Part> parts{{10, n / 2, 0}, {n / 2 + 3, n, n / 2 - 10}};
  const size_t shard = n / 2 - 10 + n - (n / 2 + 3);
  std::vector<float> grads;
  for (const AdamW::Part& p : parts)
    grads.insert(grads.end(), b.grads.begin() + ptrdiff_t(p.begin), b.grads.begin() + ptrdiff_t(p.end));
  struct Run {
    std::vector<float> params, exp_avg, exp_avg_sq;
  };
  auto run = [&](AdamWConfig config, const Run* resume_from) {
    AdamW adam(b.table, config, parts, backend);
    DeviceArray<float> params(backend, n), d_grads(backend, shard);
    backend.to_device(params.data(), resume_from ? resume_from->params.data() : b.params.data(), n * sizeof(float));
    backend.to_device(d_grads.data(), grads.data(), shard * sizeof(float));
    if (resume_from) {
      adam.state_from_host(0, resume_from->exp_avg.data());
      adam.state_from_host(1, resume_from->exp_avg_sq.data());
    }
    for (int step = 0; step < (resume_from ? 1 : 3); step++) adam.step(params.data(), d_grads.data(), 1e-2, true);
    Run r{std::vector<float>(n), std::vector<float>(shard), std::vector<float>(shard)};
    backend.to_host(r.params.data(), params.data(), n * sizeof(float));
    adam.state_to_host(0, r.exp_avg.data());
    adam.state_to_host(1, r.exp_avg_sq.data());
    return r;
  };
  AdamWConfig on_host;
  on_host.host_moments = true;
  const Run device = run(AdamWConfig{}, nullptr), host = run(on_host, nullptr);
  EXPECT_EQ(device.params, host.params);
  EXPECT_EQ(device.exp_avg, host.exp_avg);
  EXPECT_EQ(device.exp_avg_sq, host.exp_avg_sq);
  EXPECT_NE(device.exp_avg, std::vector<float>(shard, 0.0f));
  const Run device_on = run(AdamWConfig{}, &host), host_on = run(on_host, &device);
  EXPECT_EQ(device_on.params, host_on.params);
  EXPECT_EQ(device_on.exp_avg_sq, host_on.exp_avg_sq);
  EXPECT_NE(device_on.params, device.params);
}

TEST(AdamW, HostMomentsGiveTheBitsOfBackendMoments) { check_host_moments(cpu_backend()); }

TEST(AdamW, HostMomentsGiveTheBitsOfBackendMomentsCuda) {
  SKIP_WITHOUT_CUDA();
  check_host_moments(backend_for(Device::cuda));
}

}  // namespace
}  // namespace replica::optim
