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

}  // namespace
}  // namespace replica::model
