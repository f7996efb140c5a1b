// optim/clip: global L2 norm and torch's clip coefficient min(1, max_norm / (norm + 1e-6)); the norm has
// the same bits for any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "replica/optim/clip.h"

namespace replica::optim {
namespace {

TEST(Clip, NormAndScaleAboveMax) {
  std::vector<float> g = {3.0f, 0.0f, -4.0f};
  double norm = clip_grad_norm(g.data(), g.size(), 1.0);
  EXPECT_EQ(norm, 5.0);
  float coef = float(1.0 / (5.0 + 1e-6));
  EXPECT_EQ(g[0], 3.0f * coef);
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_EQ(g[2], -4.0f * coef);
  EXPECT_NEAR(std::sqrt(g[0] * g[0] + g[2] * g[2]), 1.0, 1e-6);
}

TEST(Clip, BelowMaxLeavesGradientsUnchanged) {
  std::vector<float> g = {0.3f, -0.4f};
  std::vector<float> before = g;
  EXPECT_NEAR(clip_grad_norm(g.data(), g.size(), 1.0), 0.5, 1e-7);
  EXPECT_EQ(g, before);
  // At norm = max_norm the coefficient is max / (max + 1e-6) < 1: torch scales by it.
  std::vector<float> h = {1.0f};
  clip_grad_norm(h.data(), h.size(), 1.0);
  EXPECT_EQ(h[0], float(1.0 / (1.0 + 1e-6)));
}

TEST(Clip, NormIsIndependentOfThreadCountAndAccurate) {
  std::vector<float> g(1'000'003);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1e-3f);
  for (float& x : g) x = dist(rng);
  long double exact = 0;
  for (float x : g) exact += (long double)x * (long double)x;
  std::vector<double> norms;
  for (int threads : {1, 2, 5}) {
    omp_set_num_threads(threads);
    norms.push_back(global_norm(g.data(), g.size()));
  }
  omp_set_num_threads(omp_get_num_procs());
  EXPECT_EQ(norms[0], norms[1]);
  EXPECT_EQ(norms[0], norms[2]);
  EXPECT_NEAR(norms[0], std::sqrt(double(exact)), 1e-12 * norms[0]);
  EXPECT_EQ(sum_of_squares(g.data(), 0), 0.0);
}

}  // namespace
}  // namespace replica::optim
