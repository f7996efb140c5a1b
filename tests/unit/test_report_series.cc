// Smoothing and interpolation of the report's series, on values worked out by hand.
#include <gtest/gtest.h>

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
