// PythonRandom against CPython itself (tools/reference/python_random_ref.py run at test time on /usr/bin/python3):
// MT19937 seeding from small, 64-bit and negative seeds, getrandbits, _randbelow, random, shuffle and sample.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <sstream>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/python_random.h"
#include "scratch_dir.h"

using replica::PythonRandom;

namespace {

// The draws of tools/reference/python_random_ref.py, in its order.
constexpr int kBits[] = {1, 7, 31, 33, 53, 63, 64};
constexpr uint64_t kBelow[] = {1, 2, 3, 7, 1000, (1ull << 32) - 1, (1ull << 32) + 1, (1ull << 63) + 5};
constexpr size_t kShuffle[] = {0, 1, 2, 10, 998};
constexpr std::pair<size_t, size_t> kSample[] = {{10, 3}, {21, 21}, {22, 5}, {100, 6}, {1000, 40}, {1000000, 100}};

std::vector<size_t> read_list(std::istream& in) {
  size_t n;
  in >> n;
  std::vector<size_t> items(n);
  for (size_t& x : items) in >> x;
  return items;
}

}  // namespace

TEST(PythonRandom, DrawsMatchCPython) {
  const std::vector<int64_t> seeds = {0,          1,          123,           1234, 34521,
                                      4294967295, 4294967296, 1099511627781, -7,   9223372036854775807};
  const std::string out = (replica::testing::scratch_dir("python_random") / "draws.txt").string();
  std::string command = "/usr/bin/python3 " + std::string(REPLICA_SOURCE_DIR) + "/tools/reference/python_random_ref.py";
  for (int64_t seed : seeds) command += " " + std::to_string(seed);
  ASSERT_EQ(std::system((command + " > " + out).c_str()), 0) << command;
  std::istringstream lines(replica::read_text_file(out));
  for (int64_t seed : seeds) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    int64_t seed_read;
    lines >> seed_read;
    ASSERT_EQ(seed_read, seed);
    PythonRandom rng(seed);
    for (int i = 0; i < 8; i++) {
      uint64_t expected;
      lines >> expected;
      EXPECT_EQ(rng.getrandbits(32), expected) << "draw " << i;
    }
    for (int k : kBits) {
      uint64_t expected;
      lines >> expected;
      EXPECT_EQ(rng.getrandbits(k), expected) << "getrandbits(" << k << ")";
    }
    for (uint64_t n : kBelow) {
      uint64_t expected;
      lines >> expected;
      EXPECT_EQ(rng.randbelow(n), expected) << "randbelow(" << n << ")";
    }
    for (int i = 0; i < 3; i++) {
      std::string hex;
      lines >> hex;
      EXPECT_EQ(rng.random(), std::strtod(hex.c_str(), nullptr)) << "random() " << i << " = " << hex;
    }
    for (size_t n : kShuffle) {
      std::vector<size_t> x(n);
      std::iota(x.begin(), x.end(), size_t(0));
      rng.shuffle(std::span<size_t>(x));
      EXPECT_EQ(x, read_list(lines)) << "shuffle of " << n;
    }
    for (auto [n, k] : kSample)
      EXPECT_EQ(rng.sample(n, k), read_list(lines)) << "sample(range(" << n << "), " << k << ")";
  }
}

TEST(PythonRandom, ShuffleOfTheStage3FileListMatchesTheReferenceVector) {
  // stage3.md §2.1: random.Random(123).shuffle(list(range(998))), the source permutation of OLMo 3's longmino mix.
  std::vector<size_t> order(998);
  std::iota(order.begin(), order.end(), size_t(0));
  PythonRandom(123).shuffle(std::span<size_t>(order));
  const std::vector<size_t> head(order.begin(), order.begin() + 24), tail(order.end() - 6, order.end());
  EXPECT_EQ(head, (std::vector<size_t>{178, 957, 641, 410, 255, 470, 433, 580, 257, 450, 657, 316,
                                       628, 76,  100, 633, 288, 143, 19,  524, 118, 191, 3,   195}));
  EXPECT_EQ(tail, (std::vector<size_t>{272, 417, 787, 89, 274, 53}));
}

TEST(PythonRandom, RejectsAnEmptyRangeAndAnOversizedSample) {
  PythonRandom rng(1);
  EXPECT_THROW(rng.randbelow(0), replica::Error);
  EXPECT_THROW(rng.sample(3, 4), replica::Error);
  EXPECT_THROW(rng.getrandbits(65), replica::Error);
}
