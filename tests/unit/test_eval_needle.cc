// eval/needle: the needle-in-a-haystack cases are the same on every run, each exactly its length, with the needle
// sentence at the requested depth of the haystack; the suite's `needle` section is read and checked.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>

#include "cl100k_tokenizer.h"
#include "error_of.h"
#include "replica/core/error.h"
#include "replica/eval/needle.h"
#include "replica/eval/suite.h"
#include "scratch_dir.h"

namespace replica::eval {
namespace {

std::vector<int32_t> encode(const std::string& text) {
  const std::vector<uint32_t> ids = cl100k_tokenizer().encode_ordinary(text);
  return {ids.begin(), ids.end()};
}

// A haystack of distinct ids 0..n-1, so every context token says where it came from.
std::vector<int32_t> counting_haystack(int32_t n) {
  std::vector<int32_t> h(size_t(n), 0);
  std::iota(h.begin(), h.end(), 0);
  return h;
}

NeedleTask small_task() {
  NeedleTask t;
  t.lengths = {64, 200};
  t.depths = {0.0, 0.3, 1.0};
  t.trials = 3;
  t.distractors = 5;
  t.seed = 7;
  return t;
}

TEST(EvalNeedle, SameCasesOnEveryRun) {
  const std::vector<int32_t> hay = counting_haystack(1000);
  const std::vector<NeedleCase> a = needle_cases(small_task(), hay, cl100k_tokenizer());
  const std::vector<NeedleCase> b = needle_cases(small_task(), hay, cl100k_tokenizer());
  ASSERT_EQ(a.size(), 2u * 3u * 3u);
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].context, b[i].context);
    EXPECT_EQ(a[i].values, b[i].values);
  }
  NeedleTask other = small_task();
  other.seed = 8;
  EXPECT_NE(needle_cases(other, hay, cl100k_tokenizer())[0].values, a[0].values);
}

TEST(EvalNeedle, EveryCandidateSequenceIsExactlyItsLength) {
  for (const NeedleCase& c : needle_cases(small_task(), counting_haystack(1000), cl100k_tokenizer())) {
    ASSERT_EQ(c.values.size(), 6u);
    for (const std::vector<int32_t>& v : c.values) EXPECT_EQ(int64_t(c.context.size() + v.size()), c.length);
  }
}

TEST(EvalNeedle, NeedleSitsAtTheRequestedDepthOfItsHaystack) {
  const std::vector<int32_t> hay = counting_haystack(1000);
  for (const NeedleCase& c : needle_cases(small_task(), hay, cl100k_tokenizer())) {
    EXPECT_EQ(c.needle_at, std::llround(c.depth * double(c.haystack)));
    // The value the needle states is the first candidate, and every candidate is a distinct 7-digit number.
    const std::string value = cl100k_tokenizer().decode(std::vector<uint32_t>(c.values[0].begin(), c.values[0].end()));
    ASSERT_EQ(value.size(), 8u) << value;
    const std::vector<int32_t> needle = encode(" The special magic number for " + c.key + " is" + value + ".");
    for (size_t d = 1; d < c.values.size(); d++) EXPECT_NE(c.values[d], c.values[0]);
    ASSERT_GE(c.context.size(), size_t(c.needle_at) + needle.size());
    EXPECT_TRUE(std::equal(needle.begin(), needle.end(), c.context.begin() + c.needle_at)) << c.depth;
    // Haystack tokens before and after it, in order, from trial × longest length on.
    const int32_t start = int32_t(c.trial) * 200;
    for (int64_t i = 0; i < c.haystack; i++) {
      const size_t at = size_t(i < c.needle_at ? i : i + int64_t(needle.size()));
      ASSERT_EQ(c.context[at], hay[size_t(start + i)]) << "haystack token " << i;
    }
    const std::vector<int32_t> question =
        encode("\nWhat is the special magic number for " + c.key + "? The special magic number for " + c.key + " is");
    EXPECT_TRUE(std::equal(question.rbegin(), question.rend(), c.context.rbegin()));
  }
}

TEST(EvalNeedle, ShortHaystackRepeatsAndTooShortLengthIsRefused) {
  const std::vector<NeedleCase> cases = needle_cases(small_task(), counting_haystack(10), cl100k_tokenizer());
  EXPECT_EQ(cases.back().context[0], (2 * 200) % 10);
  NeedleTask t = small_task();
  t.lengths = {20};
  try {
    needle_cases(t, counting_haystack(10), cl100k_tokenizer());
    FAIL() << "a 20-token length was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needle.lengths: 20 tokens cannot hold"), std::string::npos) << e.what();
  }
}

std::string suite_error(const std::string& yaml) {
  const std::string path = replica::testing::scratch_dir("needle").string() + "/suite.yaml";
  std::ofstream(path) << yaml;
  return error_of([&] { load_suite(path); });
}

TEST(EvalNeedle, SuiteSectionValuesAndBadKeys) {
  const std::string dir = replica::testing::scratch_dir("needle").string();
  std::ofstream(dir + "/heldout.npy") << "tokens";
  const std::string path = dir + "/ok.yaml";
  std::ofstream(path) << "needle: {files: [" << dir << "/heldout.npy], lengths: [128, 256], depths: [0, 0.5],"
                      << " trials: 2, distractors: 4, seed: 11}\n";
  const SuiteSpec s = load_suite(path);
  ASSERT_TRUE(s.needle.enabled);
  EXPECT_EQ(s.needle.files.at(0).path, dir + "/heldout.npy");
  EXPECT_EQ(s.needle.task.lengths, (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(s.needle.task.depths, (std::vector<double>{0.0, 0.5}));
  EXPECT_EQ(s.needle.task.trials, 2);
  EXPECT_EQ(s.needle.task.distractors, 4);
  EXPECT_EQ(s.needle.task.seed, 11);
  EXPECT_FALSE(s.needle.task.extrapolate);
  std::ofstream(path) << "needle: {files: [" << dir << "/heldout.npy], extrapolate: true}\n";
  EXPECT_TRUE(load_suite(path).needle.task.extrapolate);
  const std::string files = "files: [" + dir + "/heldout.npy]";
  EXPECT_NE(suite_error("needle: {" + files + ", depth: [0.5]}\n").find("unknown key 'needle.depth'"),
            std::string::npos);
  EXPECT_NE(suite_error("needle: {" + files + ", depths: [1.5]}\n").find("'needle.depths': 1.5 is not in [0, 1]"),
            std::string::npos);
  EXPECT_NE(suite_error("needle: {" + files + ", lengths: [0]}\n").find("'needle.lengths': 0"), std::string::npos);
  EXPECT_NE(suite_error("needle: {" + files + ", distractors: 0}\n").find("'needle.distractors'"), std::string::npos);
  EXPECT_NE(suite_error("needle: {" + files + ", extrapolate: 2}\n").find("needle.extrapolate"), std::string::npos);
  EXPECT_NE(suite_error("needle: {lengths: [64]}\n").find("'needle.files' lists no token files"), std::string::npos);
}

}  // namespace
}  // namespace replica::eval
