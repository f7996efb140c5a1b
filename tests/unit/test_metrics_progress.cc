// metrics/progress: a live line on a terminal keeps every log_every-th step in the scrollback; plain lines carry no
// control characters; an MFU without a trustworthy peak reads "n/a".
#include "replica/metrics/progress.h"

#include <gtest/gtest.h>

#include "replica/core/error.h"

namespace replica::metrics {
namespace {

std::string printed(bool live, int64_t log_every, int64_t steps, std::optional<double> mfu = 0.25) {
  ::testing::internal::CaptureStdout();
  Progress progress(log_every, live);
  for (int64_t s = 1; s <= steps; s++) progress.step({s, steps, 2.5, 1e-3, 0.5, 1000.0, mfu, false});
  return ::testing::internal::GetCapturedStdout();
}

// The text of each step as shown, split at the carriage returns that start every rewrite of the live line.
std::vector<std::string> pieces(const std::string& out) {
  std::vector<std::string> result;
  for (size_t begin = 0; begin < out.size();) {
    size_t end = out.find('\r', begin + 1);
    if (end == std::string::npos) end = out.size();
    result.push_back(out.substr(begin, end - begin));
    begin = end;
  }
  return result;
}

TEST(MetricsProgress, ALiveLineKeepsEveryLogEveryStepAndTheLast) {
  const std::vector<std::string> shown = pieces(printed(true, 2, 5));
  ASSERT_EQ(shown.size(), 5u);
  for (int64_t s = 1; s <= 5; s++) {
    const std::string& text = shown[size_t(s - 1)];
    EXPECT_EQ(text.rfind("\r\033[Kstep " + std::to_string(s) + "/5  loss 2.5000", 0), 0u) << text;
    EXPECT_EQ(text.back() == '\n', s % 2 == 0 || s == 5) << text;
  }
}

TEST(MetricsProgress, AMessageClearsTheLiveLineButNotAKeptOne) {
  ::testing::internal::CaptureStdout();
  Progress progress(2, true);
  progress.step({1, 4, 2.5, 1e-3, 0.5, 1000.0, 0.25, false});  // live
  progress.line("first");
  progress.step({2, 4, 2.5, 1e-3, 0.5, 1000.0, 0.25, false});  // kept
  progress.line("second");
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("\r\033[Kfirst\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nsecond\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("\r\033[Ksecond"), std::string::npos) << out;
}

TEST(MetricsProgress, PlainLinesHaveNoControlCharacters) {
  const std::string out = printed(false, 2, 5);
  EXPECT_EQ(out.find_first_of("\r\033"), std::string::npos);
  EXPECT_NE(out.find("step 2/5  loss 2.5000  lr 1.000e-03  gnorm 0.500  1000 tok/s  MFU 25.0%"), std::string::npos);
  EXPECT_EQ(out.find("step 3/5"), std::string::npos);
  EXPECT_NE(out.find("step 5/5"), std::string::npos);
}

TEST(MetricsProgress, AnMfuWithoutATrustworthyPeakReadsNotAvailable) {
  EXPECT_NE(printed(false, 1, 1, std::nullopt).find("MFU n/a  ETA"), std::string::npos);
}

TEST(MetricsProgress, StylesParseByName) {
  EXPECT_EQ(parse_progress_style("auto"), ProgressStyle::automatic);
  EXPECT_EQ(parse_progress_style("plain"), ProgressStyle::plain);
  EXPECT_STREQ(progress_style_name(ProgressStyle::plain), "plain");
  EXPECT_THROW(parse_progress_style("live"), Error);
}

}  // namespace
}  // namespace replica::metrics
