// The sampler (model/sampler.h): greedy choice and its ties, the sets top-k and top-p keep, frequencies of the
// draws against softmax(logits / T), determinism for a seed, and the errors that name the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "replica/core/error.h"
#include "replica/model/sampler.h"

namespace replica::model {
namespace {

SamplingConfig sampling(double temperature, int64_t top_k = 0, double top_p = 1.0, uint64_t seed = 0) {
  return {.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = seed};
}

// How often each id is drawn in n draws.
std::map<int32_t, int> counts(Sampler& sampler, const std::vector<float>& logits, int n) {
  std::map<int32_t, int> seen;
  for (int i = 0; i < n; i++) seen[sampler.next(logits)]++;
  return seen;
}

TEST(Sampler, GreedyTakesTheLargestLogitAndTheLowestIdOfATie) {
  Sampler greedy(sampling(0.0));
  EXPECT_EQ(greedy.next(std::vector<float>{0.1f, 2.0f, -1.0f, 1.9f}), 1);
  EXPECT_EQ(greedy.next(std::vector<float>{0.5f, 3.0f, 3.0f, 3.0f}), 1);
}

TEST(Sampler, DrawsFollowTheTemperedSoftmax) {
  const std::vector<float> logits = {1.0f, 0.0f, -0.5f, 2.0f};
  for (double temperature : {0.5, 1.0, 2.0}) {
    Sampler sampler(sampling(temperature, 0, 1.0, 7));
    const int n = 40000;
    const std::map<int32_t, int> seen = counts(sampler, logits, n);
    double z = 0.0;
    for (float l : logits) z += std::exp(double(l) / temperature);
    for (int32_t id = 0; id < 4; id++) {
      const double p = std::exp(double(logits[size_t(id)]) / temperature) / z;
      const double sigma = std::sqrt(p * (1 - p) / n);
      EXPECT_NEAR(double(seen.count(id) ? seen.at(id) : 0) / n, p, 5 * sigma) << "T " << temperature << " id " << id;
    }
  }
}

TEST(Sampler, TopKKeepsTheKMostProbable) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f, -1.0f};
  Sampler sampler(sampling(5.0, 2));  // a high temperature: without top-k every id would show
  const std::map<int32_t, int> seen = counts(sampler, logits, 2000);
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(seen.at(1), 0);
  EXPECT_GT(seen.at(3), 0);
  Sampler one(sampling(5.0, 1));
  EXPECT_EQ(counts(one, logits, 200), (std::map<int32_t, int>{{1, 200}}));
}

TEST(Sampler, TopPKeepsTheSmallestSetThatReachesP) {
  // p values away from the cumulative sums 0.5, 0.8, 0.95, where rounding would decide. Probabilities 0.5, 0.3, 0.15,
  // 0.05 (ids 2, 0, 3, 1) at temperature 1.
  const std::vector<float> logits = {float(std::log(0.3)), float(std::log(0.05)), float(std::log(0.5)),
                                     float(std::log(0.15))};
  const std::map<double, std::vector<int32_t>> kept = {
      {0.45, {2}}, {0.55, {0, 2}}, {0.75, {0, 2}}, {0.85, {0, 2, 3}}, {0.97, {0, 1, 2, 3}}};
  for (const auto& [p, ids] : kept) {
    Sampler sampler(sampling(1.0, 0, p, 3));
    std::vector<int32_t> seen;
    for (const auto& [id, n] : counts(sampler, logits, 4000)) seen.push_back(id);
    EXPECT_EQ(seen, ids) << "top-p " << p;
  }
}

TEST(Sampler, TheSameSeedGivesTheSameDrawsAndAnotherSeedOthers) {
  const std::vector<float> flat(50, 0.0f);
  auto draws = [&](uint64_t seed) {
    Sampler sampler(sampling(1.0, 0, 1.0, seed));
    std::vector<int32_t> ids;
    for (int i = 0; i < 20; i++) ids.push_back(sampler.next(flat));
    return ids;
  };
  EXPECT_EQ(draws(11), draws(11));
  EXPECT_NE(draws(11), draws(12));
}

TEST(Sampler, OutOfRangeSettingsNameTheirFlag) {
  auto message = [](const SamplingConfig& config) {
    try {
      config.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(sampling(-1.0)).find("--temperature"), std::string::npos);
  EXPECT_NE(message(sampling(1.0, -2)).find("--top-k"), std::string::npos);
  EXPECT_NE(message(sampling(1.0, 0, 0.0)).find("--top-p"), std::string::npos);
  EXPECT_NE(message(sampling(1.0, 0, 1.5)).find("--top-p"), std::string::npos);
  EXPECT_NE(message(sampling(0.0, 5)).find("--temperature > 0"), std::string::npos);
  EXPECT_EQ(message(sampling(0.7, 40, 0.9)), "");
}

}  // namespace
}  // namespace replica::model
