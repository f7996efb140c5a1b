// Global data order parity with numpy itself (tools/data/numpy_oracle.py run at test time): PCG64 seeding
// and draws, Generator.shuffle, truncation to whole batches and rank slices row[r::W].
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "scratch_dir.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/npy.h"
#include "replica/data/order.h"
#include "replica/data/pcg64.h"

using namespace replica;
using namespace replica::data;

namespace {

std::string numpy_oracle_output(const std::string& args) {
  std::string out = (replica::testing::scratch_dir("data_order") / "numpy_oracle.out").string();
  std::string command = "/usr/bin/python3 " + std::string(REPLICA_SOURCE_DIR) + "/tools/data/numpy_oracle.py " +
                        args + " > " + out;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return read_text_file(out);
}

std::string to_string(unsigned __int128 x) {
  std::string s;
  do {
    s.insert(s.begin(), char('0' + int(x % 10)));
    x /= 10;
  } while (x);
  return s;
}

}  // namespace

TEST(Order, Pcg64SeedingAndDrawsMatchNumpy) {
  const std::vector<uint64_t> seeds = {0, 1, 42, 34522, 1337 + 1, 4294967296ull, 18446744073709551615ull};
  std::string args = "pcg";
  for (uint64_t s : seeds) args += " " + std::to_string(s);
  std::istringstream lines(numpy_oracle_output(args));
  for (uint64_t seed : seeds) {
    std::string seed_text, state, inc;
    lines >> seed_text >> state >> inc;
    ASSERT_EQ(seed_text, std::to_string(seed));
    Pcg64 rng(seed);
    EXPECT_EQ(to_string(rng.state()), state) << "seed " << seed;
    EXPECT_EQ(to_string(rng.increment()), inc) << "seed " << seed;
    for (int i = 0; i < 6; i++) {
      uint64_t draw;
      lines >> draw;
      EXPECT_EQ(rng.next_uint64(), draw) << "seed " << seed << " draw " << i;
    }
  }
}

TEST(Order, BufferedUint32DrawsAndInterval) {
  Pcg64 a(7), b(7);
  uint64_t x = a.next_uint64();
  EXPECT_EQ(b.next_uint32(), uint32_t(x));  // low half first
  EXPECT_EQ(b.next_uint32(), uint32_t(x >> 32));
  EXPECT_EQ(random_interval(a, 0), 0u);
  for (int i = 0; i < 1000; i++) EXPECT_LE(random_interval(a, 5), 5u);
}

TEST(Order, ShuffleMatchesNumpyGenerator) {
  // N just below and above powers of two (where the rejection mask changes), ~1e6, seeds small and large.
  struct Case {
    uint64_t n, seed, epoch, global_batch;
  };
  const std::vector<Case> cases = {
      {1, 0, 0, 1},          {2, 0, 1, 1},           {255, 1, 1, 5},           {256, 34521, 1, 16},
      {257, 34521, 1, 16},   {65535, 1337, 1, 512},  {65537, 34521, 2, 512},   {1000003, 34521, 1, 512},
      {131071, 123456789012345ull, 3, 100}, {4097, 9223372036854775807ull, 7, 64},
  };
  std::string dir = replica::testing::scratch_dir("orders").string();
  std::string args = "order " + dir;
  for (const auto& c : cases) args += fmt::format(" {}:{}:{}:{}", c.n, c.seed, c.epoch, c.global_batch);
  numpy_oracle_output(args);
  for (const auto& c : cases) {
    NpyArray expected = read_npy(fmt::format("{}/order_{}_{}_{}_{}.npy", dir, c.n, c.seed, c.epoch, c.global_batch));
    GlobalOrder order(c.n, c.seed, c.epoch, c.global_batch);
    ASSERT_EQ(expected.header.shape, (std::vector<int64_t>{int64_t(c.n / c.global_batch), int64_t(c.global_batch)}));
    ASSERT_EQ(order.num_batches(), c.n / c.global_batch);
    ASSERT_EQ(order.indices().size(), expected.header.count());
    EXPECT_TRUE(std::equal(order.indices().begin(), order.indices().end(), expected.as<uint32_t>()))
        << "N=" << c.n << " seed=" << c.seed << " epoch=" << c.epoch;
  }
}

TEST(Order, RankSlicesAreStridedAndIndependentOfWorldSize) {
  GlobalOrder order(10000, 34521, 1, 24);
  for (uint64_t b : {uint64_t(0), uint64_t(7), order.num_batches() - 1}) {
    auto row = order.batch(b);
    for (int world : {1, 2, 3, 4, 6, 8, 12, 24}) {
      std::vector<uint32_t> rebuilt(row.size());
      for (int rank = 0; rank < world; rank++) {
        auto slice = order.rank_slice(b, rank, world);
        ASSERT_EQ(slice.size(), row.size() / world);
        for (size_t k = 0; k < slice.size(); k++) {
          EXPECT_EQ(slice[k], row[rank + k * world]);
          rebuilt[rank + k * world] = slice[k];
        }
      }
      EXPECT_TRUE(std::equal(rebuilt.begin(), rebuilt.end(), row.begin()));
    }
  }
  EXPECT_THROW(order.rank_slice(0, 0, 5), replica::Error);  // 24 is not divisible by 5
  EXPECT_THROW(order.batch(order.num_batches()), replica::Error);
  EXPECT_THROW(GlobalOrder(10, 0, 1, 11), replica::Error);
}

TEST(Order, EpochsAdvanceTheSeed) {
  GlobalOrder e1(5000, 100, 1, 10), e2(5000, 100, 2, 10), s101(5000, 101, 1, 10);
  EXPECT_FALSE(std::equal(e1.indices().begin(), e1.indices().end(), e2.indices().begin()));
  // seed + epoch is what seeds the generator, as in OLMo-core.
  EXPECT_TRUE(std::equal(e2.indices().begin(), e2.indices().end(), s101.indices().begin()));
}

TEST(Order, MicroBatchCOfABatchIsRowsGOverMApart) {
  // Global micro-batch c of G rows in micro-batches of M: rows c, c + G/M, ...; rank r of W computes micro-batches
  // r, r + W, r + 2W, ... whose rows, taken together, are exactly its row[r::W] slice, for every W dividing G/M.
  const uint64_t G = 24;
  for (uint64_t M : {1, 2, 3, 4, 6, 12, 24}) {
    const uint64_t count = G / M;
    for (uint64_t c = 0; c < count; c++) {
      const std::vector<uint64_t> rows = micro_batch_rows(G, M, c);
      ASSERT_EQ(rows.size(), M);
      for (uint64_t i = 0; i < M; i++) EXPECT_EQ(rows[i], c + i * count) << "M=" << M << " c=" << c;
    }
    for (int world = 1; world <= int(count); world++) {
      if (count % uint64_t(world) != 0) {
        EXPECT_THROW(rank_rows(G, M, 0, world), replica::Error) << M << " " << world;
        continue;
      }
      for (int rank = 0; rank < world; rank++) {
        const std::vector<uint64_t> rows = rank_rows(G, M, rank, world);
        ASSERT_EQ(rows.size(), G / uint64_t(world));
        for (uint64_t k = 0; k < rows.size() / M; k++) {  // local micro-batch k is global micro-batch rank + W k
          const std::vector<uint64_t> global = micro_batch_rows(G, M, uint64_t(rank) + uint64_t(world) * k);
          EXPECT_TRUE(std::equal(global.begin(), global.end(), rows.begin() + ptrdiff_t(k * M)));
        }
        std::vector<uint64_t> as_set = rows, slice;
        std::sort(as_set.begin(), as_set.end());
        for (uint64_t g = uint64_t(rank); g < G; g += uint64_t(world)) slice.push_back(g);
        EXPECT_EQ(as_set, slice) << "M=" << M << " rank " << rank << " of " << world;
      }
    }
  }
  EXPECT_THROW(micro_batch_rows(G, 5, 0), replica::Error);  // 5 does not divide 24
  EXPECT_THROW(micro_batch_rows(G, 4, 6), replica::Error);  // 6 micro-batches: 0..5
}

TEST(Order, RankMicroBatchesReadTheRankSliceInMicroBatchOrder) {
  GlobalOrder order(1000, 34521, 1, 24);
  for (int world : {1, 2, 3}) {
    for (int rank = 0; rank < world; rank++) {
      const std::vector<uint32_t> got = order.rank_micro_batches(5, rank, world, 2);
      const std::vector<uint64_t> rows = rank_rows(24, 2, rank, world);
      ASSERT_EQ(got.size(), rows.size());
      for (size_t i = 0; i < rows.size(); i++) EXPECT_EQ(got[i], order.batch(5)[rows[i]]);
      std::vector<uint32_t> sorted = got, slice = order.rank_slice(5, rank, world);
      std::sort(sorted.begin(), sorted.end());
      std::sort(slice.begin(), slice.end());
      EXPECT_EQ(sorted, slice);
    }
  }
}
