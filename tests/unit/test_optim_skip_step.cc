// optim/skip_step: OLMo-core's rule — inactive below window/2 values (the current one included), one-sided
// σ threshold over the previous values with Bessel std, spikes in loss or grad norm, non-finite values,
// and the checkpointed state.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/optim/skip_step.h"

namespace replica::optim {
namespace {

double smooth_loss(int i) { return 3.0 + 0.01 * std::sin(0.7 * i); }
double smooth_norm(int i) { return 1.0 + 0.02 * std::cos(0.3 * i); }

TEST(SkipStep, InactiveUntilHalfTheWindowIncludingTheCurrentValue) {
  SkipStep rule(128, 6.0);
  for (int i = 0; i < 62; i++) EXPECT_TRUE(rule.record(smooth_loss(i), smooth_norm(i)));
  EXPECT_TRUE(rule.record(1000.0, smooth_norm(62)));   // 63rd value: still inactive, a spike passes
  EXPECT_FALSE(rule.record(1000.0, smooth_norm(63)));  // 64th value: active (63 previous values)
}

TEST(SkipStep, SyntheticLossAndGradNormSpikes) {
  SkipStep rule;
  for (int i = 0; i < 100; i++) ASSERT_TRUE(rule.record(smooth_loss(i), smooth_norm(i)));
  EXPECT_FALSE(rule.record(3.5, smooth_norm(100)));              // loss spike
  EXPECT_TRUE(rule.record(smooth_loss(101), smooth_norm(101)));  // the spike was recorded; normal passes
  EXPECT_FALSE(rule.record(smooth_loss(102), 5.0));              // grad-norm spike alone
  EXPECT_TRUE(rule.record(2.0, smooth_norm(103)));               // one-sided: a sudden drop is not skipped
}

TEST(SkipStep, ThresholdIsMeanPlusSigmaBesselStd) {
  // window 4: active from the 2nd value. Previous values [0, 0, 0, 4]: mean 1, Bessel std
  // sqrt((1 + 1 + 1 + 9) / 3) = 2, so the bound is 1 + 6·2 = 13 (inclusive).
  auto fill = [](SkipStep& rule) {
    for (double v : {0.0, 0.0, 0.0, 4.0}) rule.record(v, std::nullopt);
  };
  SkipStep at(4, 6.0), above(4, 6.0);
  fill(at);
  fill(above);
  EXPECT_TRUE(at.record(13.0, std::nullopt));
  EXPECT_FALSE(above.record(13.000001, std::nullopt));
  EXPECT_EQ(above.size(), 5u);  // window + 1 values: the previous four and the current one
  // With a single previous value torch's Bessel std is NaN, so OLMo-core skips: same here.
  SkipStep two(4, 6.0);
  EXPECT_TRUE(two.record(1.0, std::nullopt));
  EXPECT_FALSE(two.record(1.0, std::nullopt));
}

TEST(SkipStep, NonFiniteValuesAreSkippedAndLeftOutOfTheStatistics) {
  SkipStep rule;
  for (int i = 0; i < 80; i++) ASSERT_TRUE(rule.record(smooth_loss(i), smooth_norm(i)));
  EXPECT_FALSE(rule.record(std::numeric_limits<double>::quiet_NaN(), smooth_norm(80)));
  EXPECT_FALSE(rule.record(smooth_loss(81), std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(rule.record(smooth_loss(82), smooth_norm(82)));
}

TEST(SkipStep, StateRoundTripsThroughJson) {
  SkipStep a;
  for (int i = 0; i < 90; i++) a.record(smooth_loss(i), smooth_norm(i));
  a.record(std::numeric_limits<double>::quiet_NaN(), 1.0);
  nlohmann::json state = nlohmann::json::parse(a.to_json().dump());
  SkipStep b;
  b.load_json(state);
  EXPECT_EQ(b.to_json().dump(), a.to_json().dump());
  for (int i = 91; i < 300; i++) {
    double loss = i % 37 == 0 ? 3.2 : smooth_loss(i);
    ASSERT_EQ(a.record(loss, smooth_norm(i)), b.record(loss, smooth_norm(i))) << "step " << i;
  }
  EXPECT_THROW(SkipStep(64).load_json(state), Error);  // window mismatch
  state["losses"] = "oops";
  EXPECT_THROW(b.load_json(state), Error);
}

}  // namespace
}  // namespace replica::optim
