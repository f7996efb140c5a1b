// kernels/rope_table: YaRN's frequencies and tables against the values OLMo-core's formula gives for OLMo 3 stage 3
// (shared/reference/stage3.md §1.1), computed here independently in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "replica/kernels/cpu/rope.h"
#include "replica/kernels/rope_table.h"

namespace replica {
namespace {

constexpr double kTheta = 500000.0;

TEST(YarnInvFreq, KeepsDividesAndBlendsTheBandsOfOlmo3) {
  const YarnScaling olmo3;  // factor 8, original 8192, beta_fast 32, beta_slow 1
  const std::vector<float> inv = yarn_inv_freq(128, kTheta, olmo3);
  ASSERT_EQ(inv.size(), 64u);
  // low = floor(18.08) = 18, high = ceil(34.98) = 35: j <= 18 kept, j >= 35 divided by 8, (j - 18) / 17 between.
  for (int64_t j = 0; j < 64; j++) {
    const double original = 1.0 / std::pow(kTheta, double(2 * j) / 128.0);
    const double ramp = std::clamp((double(j) - 18.0) / 17.0, 0.0, 1.0);
    const double expected = original / 8.0 * ramp + original * (1.0 - ramp);
    EXPECT_NEAR(inv[size_t(j)], expected, 2e-7 * expected) << "j=" << j;
  }
  // The reference's float64 values (stage3.md §1.1), to the digits it gives.
  EXPECT_NEAR(inv[18], 2.4955e-2, 0.00005e-2);
  EXPECT_NEAR(inv[19], 1.9283e-2, 0.00005e-2);
  EXPECT_NEAR(inv[35], 9.5562e-5, 0.00005e-5);
  EXPECT_NEAR(inv[63], 3.0689e-7, 0.00005e-7);
  // Outside the ramp the fp32 arithmetic is exact: the kept band is 1 / fp32(theta^(2j/D)) and the divided band that
  // over 8 (a power of two).
  EXPECT_EQ(inv[18], 1.0f / float(std::pow(kTheta, double(36.0f / 128.0f))));
  EXPECT_EQ(inv[40], 1.0f / float(std::pow(kTheta, double(80.0f / 128.0f))) / 8.0f);
}

TEST(YarnInvFreq, ARampOneDimensionWideIsAStep) {
  YarnScaling s;
  s.beta_fast = s.beta_slow = 4.0;  // low = floor(d), high = ceil(d): at most one dimension apart
  s.original_max_position_embeddings = 4096;
  const std::vector<float> inv = yarn_inv_freq(64, kTheta, s);
  const double d = 64.0 * std::log(4096.0 / (4.0 * 2.0 * std::numbers::pi)) / (2.0 * std::log(kTheta));
  const int64_t low = int64_t(std::floor(d));
  for (int64_t j = 0; j < 32; j++) {
    const float original = 1.0f / float(std::pow(kTheta, double(float(2 * j) / 64.0f)));
    EXPECT_EQ(inv[size_t(j)], j <= low ? original : original / 8.0f) << "j=" << j;
  }
}

TEST(YarnAttentionFactor, IsTheReleasedConfigValue) {
  EXPECT_DOUBLE_EQ(yarn_default_attention_factor(8.0), 1.2079441541679836);
  EXPECT_EQ(YarnScaling().attention_factor, 1.2079441541679836);
}

TEST(RopeTable, YarnScalesCosAndSinOfTheFp32Angle) {
  YarnScaling s;
  s.original_max_position_embeddings = 16;
  const int64_t T = 40, D = 16;
  const RopeTable table(T, D, kTheta, s);
  const std::vector<float> inv = yarn_inv_freq(D, kTheta, s);
  const float factor = float(s.attention_factor);
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < D / 2; i++) {
      const double angle = double(float(t) * inv[size_t(i)]);
      EXPECT_EQ(table.cos[size_t(t * D / 2 + i)], float(std::cos(angle)) * factor);
      EXPECT_EQ(table.sin[size_t(t * D / 2 + i)], float(std::sin(angle)) * factor);
    }
}

TEST(RopeTable, YarnRotationsBackwardIsTheTranspose) {
  // forward then backward multiplies by attention_factor²: a·R(θ) followed by a·R(−θ).
  YarnScaling s;
  s.original_max_position_embeddings = 16;
  const int64_t B = 2, T = 40, heads = 3, D = 16;
  const RopeTable table(T, D, kTheta, s);
  std::vector<float> x(size_t(B * T * heads * D));
  for (size_t i = 0; i < x.size(); i++) x[i] = float(std::sin(0.37 * double(i) + 0.1));
  std::vector<float> y = x;
  cpu::rope_forward(y.data(), table.cos.data(), table.sin.data(), B, T, heads, D);
  // The forward keeps each pair's norm times the factor.
  for (size_t row = 0; row < size_t(B * T * heads); row++)
    for (size_t i = 0; i < size_t(D / 2); i++) {
      const size_t a = row * size_t(D) + i, b = a + size_t(D / 2);
      EXPECT_NEAR(std::hypot(y[a], y[b]), s.attention_factor * std::hypot(x[a], x[b]), 1e-6);
    }
  cpu::rope_backward(y.data(), table.cos.data(), table.sin.data(), B, T, heads, D);
  const double a2 = s.attention_factor * s.attention_factor;
  for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(y[i], a2 * x[i], 2e-6);
}

}  // namespace
}  // namespace replica
