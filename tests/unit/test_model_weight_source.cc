// model/weight_source: WholeWeights' bf16 copy follows the weights' version, not the calls that hand them over.
#include <gtest/gtest.h>

#include <vector>

#include "replica/model/weight_source.h"

namespace replica::model {
namespace {

float rounded(const GroupWeights& g, size_t i) { return to_float(g.b16[i]); }

TEST(ModelWeightSource, TheBf16CopyFollowsTheWeightsVersion) {
  const ParamTable::Range all{0, 4};
  std::vector<float> params = {1.0f, 2.0f, 3.0f, 4.0f};
  WeightsVersion version;
  WholeWeights whole(cpu_backend(), params.size());
  whole.set(params.data(), version);
  EXPECT_EQ(rounded(whole.acquire(all, Precision::bf16), 2), 3.0f);

  params[2] = 5.0f;  // an update its owner has not bumped yet: the copy still holds the rounded version
  whole.set(params.data(), version);
  EXPECT_EQ(rounded(whole.acquire(all, Precision::bf16), 2), 3.0f);
  version.bump();  // the view handed out before sees the new weights without being set again
  EXPECT_EQ(rounded(whole.acquire(all, Precision::bf16), 2), 5.0f);

  params[2] = 6.0f;  // without a version, every set() counts as a change
  whole.set(params.data());
  EXPECT_EQ(rounded(whole.acquire(all, Precision::bf16), 2), 6.0f);
  EXPECT_EQ(whole.acquire(all, Precision::fp32).b16, nullptr);
}

// Each rounding of a group gives its copy a new generation (what kernels key what they derive from it on): the same
// while the version stays, another after a bump or a set() without a version, none in fp32; and another WholeWeights
// never repeats one.
TEST(ModelWeightSource, EachRoundingHasItsOwnGeneration) {
  const ParamTable::Range first{0, 2}, second{2, 4};
  std::vector<float> params = {1.0f, 2.0f, 3.0f, 4.0f};
  WeightsVersion version;
  WholeWeights whole(cpu_backend(), params.size()), other(cpu_backend(), params.size());
  whole.set(params.data(), version);
  other.set(params.data(), version);
  const uint64_t a = whole.acquire(first, Precision::bf16).generation, b = whole.acquire(second, Precision::bf16).generation;
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(whole.acquire(first, Precision::bf16).generation, a);
  EXPECT_EQ(whole.acquire(first, Precision::bf16).matrix(1).generation, a);
  EXPECT_NE(other.acquire(first, Precision::bf16).generation, a);
  version.bump();
  const uint64_t c = whole.acquire(first, Precision::bf16).generation;
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  whole.set(params.data());
  EXPECT_NE(whole.acquire(first, Precision::bf16).generation, c);
  EXPECT_EQ(whole.acquire(first, Precision::fp32).generation, 0u);
  EXPECT_EQ(whole.acquire(first, Precision::fp32).matrix(0).generation, 0u);
}

}  // namespace
}  // namespace replica::model
