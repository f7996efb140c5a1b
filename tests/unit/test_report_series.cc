// Smoothing and interpolation of the report's series, on values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "replica/core/error.h"
#include "replica/report/series.h"

namespace replica::report {
namespace {

TEST(ReportSeries, CentredMeanTruncatesAtTheEnds) {
  const Series s = {{1, 1.0}, {2, 2.0}, {3, 6.0}, {4, 3.0}, {6, 9.0}};
  const Series out = smooth_centred(s, 3);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].value, 1.5);  // steps 1, 2
  EXPECT_EQ(out[1].value, 3.0);  // steps 1, 2, 3
  EXPECT_NEAR(out[2].value, 11.0 / 3.0, 1e-15);
  EXPECT_EQ(out[3].value, 4.5);  // steps 3, 4 (no step 5)
  EXPECT_EQ(out[4].value, 9.0);  // step 6 alone
  EXPECT_EQ(out[4].step, 6);
  EXPECT_EQ(smooth_centred(s, 1)[2].value, 6.0);
}

// The running sum against each window summed afresh, on a long series with gaps, values of mixed size and windows
// from one point to the whole series (review case 37: a 199,999-step window over as many points).
TEST(ReportSeries, RunningMeanEqualsEachWindowSummedAfresh) {
  Series s;
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 11; };
  int64_t step = 0;
  for (int i = 0; i < 20000; i++) {
    step += 1 + int64_t(next() % 3);
    const double scale = (i % 97 == 0) ? 1e6 : 1.0;
    s.push_back({step, scale * (double(next() % 1000000) / 1e5 - 5.0)});
  }
  for (const int64_t window : {int64_t{1}, int64_t{3}, int64_t{101}, int64_t{2001}, int64_t{199999}}) {
    const Series out = smooth_centred(s, window);
    ASSERT_EQ(out.size(), s.size());
    size_t lo = 0, hi = 0;
    for (size_t i = 0; i < s.size(); i++) {
      while (s[lo].step < s[i].step - window / 2) lo++;
      while (hi < s.size() && s[hi].step <= s[i].step + window / 2) hi++;
      double sum = 0.0, magnitude = 0.0;
      for (size_t j = lo; j < hi; j++) sum += s[j].value, magnitude += std::abs(s[j].value);
      ASSERT_NEAR(out[i].value, sum / double(hi - lo), 1e-13 * magnitude / double(hi - lo))
          << "window " << window << ", point " << i;
    }
  }
}

TEST(ReportSeries, HugeValuesSmoothLikeASumAfresh) {
  const Series s = {{1, 1e308}, {2, 1e308}, {3, 1.0}, {4, 2.0}, {5, 3.0}, {6, 4.0}};
  const Series out = smooth_centred(s, 3);
  EXPECT_EQ(out[0].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(out[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(out[3].value, 2.0);  // steps 3-5, once both 1e308 points have left the window
  EXPECT_EQ(out[5].value, 3.5);
}

TEST(ReportSeries, WindowMustBeAnOddNumberOfSteps) {
  EXPECT_THROW(smooth_centred({}, 4), Error);
  EXPECT_THROW(check_window(0), Error);
  EXPECT_NO_THROW(check_window(21));
}

TEST(ReportSeries, ValueAtInterpolatesBetweenLoggedSteps) {
  const Series s = {{0, 4.0}, {10, 2.0}, {20, 3.0}};
  EXPECT_EQ(value_at(s, 0), 4.0);
  EXPECT_EQ(value_at(s, 5), 3.0);
  EXPECT_EQ(value_at(s, 15), 2.5);
  EXPECT_EQ(value_at(s, 20), 3.0);
  EXPECT_THROW(value_at(s, 21), Error);
}

TEST(ReportSeries, LaterPointForAStepReplacesTheEarlierOne) {
  SeriesBuilder b;
  b.add("loss", 2, 1.0);
  b.add("loss", 1, 3.0);
  b.add("loss", 2, 5.0);
  const Series loss = b.build().at("loss");
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_EQ(loss[0].step, 1);
  EXPECT_EQ(loss[1].value, 5.0);
}

}  // namespace
}  // namespace replica::report
