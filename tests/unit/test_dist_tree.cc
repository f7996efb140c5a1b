// dist/tree: the residue tree's order of additions and leaves, its depth, and that the streaming
// (tree_accumulate) and in-place (tree_reduce) forms add the same floats in the same order.
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "replica/dist/tree.h"

namespace replica {
namespace {

TEST(DistTree, ReduceOrderOfEightAndSix) {
  std::vector<std::pair<int64_t, int64_t>> adds;
  tree_reduce(8, [&](int64_t d, int64_t s) { adds.push_back({d, s}); });
  // ((0+4) + (2+6)) + ((1+5) + (3+7)): rank r of W = 2 owns slots ≡ r (mod 2), W = 4 slots ≡ r (mod 4).
  const std::vector<std::pair<int64_t, int64_t>> eight = {{0, 4}, {2, 6}, {0, 2}, {1, 5}, {3, 7}, {1, 3}, {0, 1}};
  EXPECT_EQ(adds, eight);
  adds.clear();
  tree_reduce(6, [&](int64_t d, int64_t s) { adds.push_back({d, s}); });
  const std::vector<std::pair<int64_t, int64_t>> six = {{0, 4}, {0, 2}, {1, 5}, {1, 3}, {0, 1}};
  EXPECT_EQ(adds, six);
  adds.clear();
  tree_reduce(1, [&](int64_t d, int64_t s) { adds.push_back({d, s}); });
  EXPECT_TRUE(adds.empty());
}

TEST(DistTree, AccumulateVisitsLeavesDepthFirstWithFewBuffers) {
  std::vector<std::pair<int64_t, int>> leaves;
  std::vector<int> adds;
  tree_accumulate(4, [&](int64_t c, int d) { leaves.push_back({c, d}); }, [&](int d) { adds.push_back(d); });
  const std::vector<std::pair<int64_t, int>> expected = {{0, 0}, {2, 1}, {1, 1}, {3, 2}};
  EXPECT_EQ(leaves, expected);
  EXPECT_EQ(adds, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(tree_depth(1), 1);
  EXPECT_EQ(tree_depth(2), 2);
  EXPECT_EQ(tree_depth(3), 2);
  EXPECT_EQ(tree_depth(4), 3);
  EXPECT_EQ(tree_depth(7), 3);
  EXPECT_EQ(tree_depth(8), 4);
  for (int64_t n = 1; n <= 40; n++) {  // the deepest buffer used is tree_depth(n) - 1
    int deepest = 0;
    tree_accumulate(n, [&](int64_t, int d) { deepest = std::max(deepest, d); }, [](int) {});
    EXPECT_EQ(deepest, tree_depth(n) - 1) << n;
  }
}

TEST(DistTree, StreamingAndInPlaceSumsAreBitwiseEqualAndOrderMatters) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  for (int64_t n : {3, 7, 8, 13}) {
    const size_t n_values = size_t(n * 64);
    std::vector<float> values(n_values);
    for (float& v : values) v = std::ldexp(mantissa(rng), exponent(rng));
    std::vector<float> slots = values;  // in place: slot c = values[c*64 .. c*64 + 64)
    tree_reduce(n, [&](int64_t d, int64_t s) {
      for (int i = 0; i < 64; i++) slots[size_t(d * 64 + i)] += slots[size_t(s * 64 + i)];
    });
    const size_t depth = size_t(tree_depth(n));
    std::vector<std::vector<float>> buffers(depth, std::vector<float>(64));
    tree_accumulate(
        n, [&](int64_t c, int d) { std::copy_n(values.begin() + c * 64, 64, buffers[size_t(d)].begin()); },
        [&](int d) {
          for (int i = 0; i < 64; i++) buffers[size_t(d)][size_t(i)] += buffers[size_t(d + 1)][size_t(i)];
        });
    int differs_from_sequential = 0;
    for (int i = 0; i < 64; i++) {
      EXPECT_EQ(buffers[0][size_t(i)], slots[size_t(i)]) << "n=" << n << " i=" << i;
      float sequential = 0.0f;
      for (int64_t c = 0; c < n; c++) sequential += values[size_t(c * 64 + i)];
      differs_from_sequential += sequential != slots[size_t(i)];
    }
    if (n > 3) {
      EXPECT_GT(differs_from_sequential, 0) << "the data cannot tell summation orders apart";
    }
  }
}

}  // namespace
}  // namespace replica
