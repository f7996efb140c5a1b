// The comparison maths of `replica report` against numbers worked out by hand: the first step where two runs differ
// bitwise, and max / mean |Δ| of the smoothed loss (window 1 and 3, and a reference logged every other step).
#include <gtest/gtest.h>

#include "replica/report/compare.h"

namespace replica::report {
namespace {

RunHistory run_with_loss(const Series& loss) {
  RunHistory run;
  run.train["loss"] = loss;
  return run;
}

TEST(ReportCompare, FindsTheFirstStepWhoseLossDiffers) {
  const RunHistory a = run_with_loss({{1, 4.0}, {2, 3.0}, {3, 2.5}, {4, 2.0}, {5, 1.5}});
  const RunHistory b = run_with_loss({{1, 4.0}, {2, 3.0}, {3, 2.75}, {4, 2.0}, {5, 1.5}});
  const std::optional<ExactComparison> e = compare_exact(a, b);
  ASSERT_TRUE(e && e->difference);
  EXPECT_EQ(e->first_step, 1);
  EXPECT_EQ(e->last_step, 5);
  EXPECT_EQ(e->identical_steps, 2);
  EXPECT_EQ(e->difference->step, 3);
  EXPECT_EQ(e->difference->metric, "loss");
  EXPECT_EQ(*e->difference->a, 2.5);
  EXPECT_EQ(*e->difference->b, 2.75);
}

TEST(ReportCompare, IdenticalRunsHaveNoDifferenceOverTheirOverlap) {
  RunHistory a = run_with_loss({{1, 4.0}, {2, 3.0}, {3, 2.5}});
  RunHistory b = run_with_loss({{2, 3.0}, {3, 2.5}, {4, 2.0}});
  a.train["mfu"] = {{1, 0.5}};  // timing: not compared
  b.train["mfu"] = {{2, 0.7}};
  const std::optional<ExactComparison> e = compare_exact(a, b);
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->difference);
  EXPECT_EQ(e->first_step, 2);
  EXPECT_EQ(e->last_step, 3);
  EXPECT_EQ(e->identical_steps, 2);
}

TEST(ReportCompare, ComparesBitsSoNegativeZeroDiffersAndAMissingMetricIsADifference) {
  RunHistory a = run_with_loss({{1, 1.0}, {2, 1.0}, {3, 1.0}});
  RunHistory b = a;
  a.train["z_loss"] = {{1, 0.0}, {2, 0.0}, {3, 0.0}};
  b.train["z_loss"] = {{1, 0.0}, {2, -0.0}, {3, 0.0}};
  std::optional<ExactComparison> e = compare_exact(a, b);
  ASSERT_TRUE(e && e->difference);
  EXPECT_EQ(e->difference->step, 2);
  EXPECT_EQ(e->difference->metric, "z_loss");

  b.train["z_loss"] = {{1, 0.0}, {3, 0.0}};  // logged the loss at step 2 but not its z-loss
  e = compare_exact(a, b);
  ASSERT_TRUE(e && e->difference);
  EXPECT_EQ(e->difference->step, 2);
  EXPECT_TRUE(e->difference->a.has_value());
  EXPECT_FALSE(e->difference->b.has_value());
}

// Newcomer review 2026-12-03 #1: a reference logged every 10th step, or a shorter run, with the run's own values was
// "first differs at step 2" and 0.31 nat OUTSIDE, because each curve was smoothed over its own points.
Series noisy_curve(int64_t steps) {
  Series s;
  uint64_t state = 12345;
  for (int64_t step = 1; step <= steps; step++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    s.push_back({step, 10.0 / (1.0 + 0.05 * double(step)) + 0.3 * (double(state >> 11) / double(1ull << 53) - 0.5)});
  }
  return s;
}

Series every(const Series& s, int64_t n) {
  Series out;
  for (const Point& p : s)
    if (p.step % n == 0) out.push_back(p);
  return out;
}

TEST(ReportCompare, SparseOrShorterCopiesOfACurveAreIdenticalToIt) {
  const Series run = noisy_curve(300);
  for (const Series& reference : {every(run, 10), every(run, 5), Series(run.begin(), run.begin() + 30), run}) {
    const std::optional<ExactComparison> e = compare_exact(run_with_loss(run), run_with_loss(reference));
    ASSERT_TRUE(e);
    EXPECT_FALSE(e->difference);
    EXPECT_EQ(e->identical_steps, int64_t(reference.size()));
    EXPECT_EQ(e->common_steps, int64_t(reference.size()));
    for (int64_t window : {1, 5, 21}) {
      for (const auto& [x, y] : {std::pair{&run, &reference}, std::pair{&reference, &run}}) {
        const std::optional<CurveDistance> d = curve_distance(*x, *y, window);
        ASSERT_TRUE(d);
        EXPECT_EQ(d->grid, CurveGrid::common_steps);
        EXPECT_EQ(d->points, int64_t(reference.size()));
        EXPECT_EQ(d->max_abs, 0.0) << "window " << window << ", reference of " << reference.size() << " points";
      }
    }
  }
  // And the rule still sees a real gap on the sparse grid: 0.02 nat from step 150 on.
  Series shifted = every(run, 10);
  for (Point& p : shifted)
    if (p.step >= 150) p.value += 0.02;
  const std::optional<CurveDistance> d = curve_distance(run, shifted, 21);
  ASSERT_TRUE(d);
  EXPECT_NEAR(d->max_abs, 0.02, 1e-12);
  EXPECT_FALSE(within(*d, 0.01));
}

TEST(ReportCompare, RunsWithoutCommonStepsAreNotCompared) {
  EXPECT_FALSE(compare_exact(run_with_loss({{1, 1.0}}), run_with_loss({{2, 1.0}})));
  EXPECT_FALSE(compare_exact(run_with_loss({{1, 1.0}}), RunHistory{}));
}

TEST(ReportCompare, DistanceOfRawCurvesIsTheLargestAndMeanGap) {
  const Series a = {{1, 4.0}, {2, 3.0}, {3, 2.5}, {4, 2.0}, {5, 1.5}};
  const Series b = {{1, 4.0}, {2, 3.0}, {3, 2.75}, {4, 2.0}, {5, 1.5}};
  const std::optional<CurveDistance> d = curve_distance(a, b, 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->points, 5);
  EXPECT_EQ(d->max_abs, 0.25);
  EXPECT_EQ(d->max_step, 3);
  EXPECT_DOUBLE_EQ(d->mean_abs, 0.05);  // 0.25 / 5
  EXPECT_TRUE(within(*d, 0.25));
  EXPECT_FALSE(within(*d, 0.2));
}

TEST(ReportCompare, DistanceOfCurvesSmoothedOverThreeSteps) {
  // Centred means over ±1 step (two points at the ends): a → 3.5, 9.5/3, 2.5, 2, 1.75 and
  // b → 3.5, 9.75/3, 7.75/3, 6.25/3, 1.75, so |Δ| = 0, 1/12, 1/12, 1/12, 0.
  const Series a = {{1, 4.0}, {2, 3.0}, {3, 2.5}, {4, 2.0}, {5, 1.5}};
  const Series b = {{1, 4.0}, {2, 3.0}, {3, 2.75}, {4, 2.0}, {5, 1.5}};
  const std::optional<CurveDistance> d = curve_distance(a, b, 3);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->window, 3);
  EXPECT_NEAR(d->max_abs, 1.0 / 12.0, 1e-15);
  EXPECT_EQ(d->max_step, 2);
  EXPECT_NEAR(d->mean_abs, 0.05, 1e-15);  // (3 / 12) / 5
}

TEST(ReportCompare, CurvesWithoutACommonStepAreInterpolated) {
  // b at steps 0, 2, 4, 6 → 3.5, 2.5, 1.5 at a's steps 1, 3, 5; a differs by 0.5 at step 5 only.
  const Series a = {{1, 3.5}, {3, 2.5}, {5, 1.0}};
  const Series b = {{0, 4.0}, {2, 3.0}, {4, 2.0}, {6, 1.0}};
  const std::optional<CurveDistance> d = curve_distance(a, b, 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->grid, CurveGrid::interpolated);
  EXPECT_EQ(d->first_step, 1);
  EXPECT_EQ(d->last_step, 5);
  EXPECT_EQ(d->points, 3);
  EXPECT_EQ(d->max_abs, 0.5);
  EXPECT_EQ(d->max_step, 5);
  EXPECT_DOUBLE_EQ(d->mean_abs, 0.5 / 3);
}

TEST(ReportCompare, DistanceUsesCrossEntropyWhenAReferenceHasNoTotalLoss) {
  RunHistory a = run_with_loss({{1, 3.0}, {2, 2.0}});
  a.train["ce"] = {{1, 2.5}, {2, 2.0}};
  RunHistory reference;
  reference.train["ce"] = {{1, 2.0}, {2, 2.0}};
  const std::optional<CurveDistance> d = curve_distance(a, reference, 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->metric, "ce");
  EXPECT_EQ(d->max_abs, 0.5);
  EXPECT_EQ(d->max_step, 1);
}

}  // namespace
}  // namespace replica::report
