// The trainer-facing loader (batches, positions, instance filter flags, fingerprint) and the repeat audit,
// including an injected double-sharding bug (each rank re-strides its own slice, as MaxText's loader did).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "scratch_dir.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/data/audit.h"
#include "replica/data/loader.h"

using namespace replica;
using namespace replica::data;

namespace {

std::string loader_dir() { return replica::testing::scratch_dir("data_loader").string() + "/"; }

// A token file whose token t is (base + t) % 100000, so any instance's content is predictable.
std::string write_shifted_tokens(const std::string& name, uint32_t n, uint32_t base) {
  std::vector<uint32_t> ids(n);
  for (uint32_t t = 0; t < n; t++) ids[t] = (base + t) % 100000;
  std::string path = loader_dir() + name;
  AtomicFile file(path);
  file.write(ids.data(), ids.size() * 4);
  file.commit();
  return path;
}

LoaderConfig small_config() {
  LoaderConfig config;
  config.files = {{"web", write_shifted_tokens("web.npy", 16 * 700 + 5, 0)},
                  {"code", write_shifted_tokens("code.npy", 16 * 300, 50000)}};
  config.seq_len = 16;
  config.seed = 34521;
  config.global_batch = 8;
  return config;
}

}  // namespace

TEST(DataLoader, BatchesFollowTheGlobalOrder) {
  DataLoader loader(small_config());
  EXPECT_EQ(loader.dataset().num_instances(), 1000u);
  EXPECT_EQ(loader.batches_per_epoch(), 125);
  GlobalOrder order(1000, 34521, 1, 8);
  Batch whole = loader.batch(1, 3);
  ASSERT_EQ(whole.rows, 8);
  for (int64_t r = 0; r < 8; r++) {
    uint32_t id = order.batch(3)[size_t(r)];
    EXPECT_EQ(whole.instances[size_t(r)], id);
    uint32_t base = id < 700 ? id * 16 : 50000 + (id - 700) * 16;  // per-file chunking
    for (int64_t t = 0; t < 16; t++) EXPECT_EQ(whole.tokens[size_t(r * 16 + t)], int32_t((base + t) % 100000));
    EXPECT_EQ(whole.keep[size_t(r)], 1);
  }
  // The global batch is the same for any world size: rank r of W holds rows r, r + W, ...
  for (int world : {2, 4, 8}) {
    for (int rank = 0; rank < world; rank++) {
      Batch part = loader.batch(1, 3, rank, world);
      ASSERT_EQ(part.rows, 8 / world);
      for (int64_t k = 0; k < part.rows; k++) {
        int64_t row = rank + k * world;
        EXPECT_EQ(part.instances[size_t(k)], whole.instances[size_t(row)]);
        EXPECT_TRUE(std::equal(part.tokens.begin() + k * 16, part.tokens.begin() + (k + 1) * 16,
                               whole.tokens.begin() + row * 16));
      }
    }
  }
  EXPECT_THROW(loader.batch(1, 0, 0, 3), Error);
}

TEST(DataLoader, WithAMicroBatchSizeRowsComeInTheRanksMicroBatchOrder) {
  // What the trainer reads: rank r's rows [k M, (k + 1) M) are global micro-batch r + W k (data/order.h).
  DataLoader loader(small_config());
  const Batch whole = loader.batch(1, 3);
  for (int world : {1, 2, 4})
    for (int rank = 0; rank < world; rank++) {
      const Batch part = loader.batch(1, 3, rank, world, 1);
      const std::vector<uint64_t> rows = rank_rows(8, 1, rank, world);
      ASSERT_EQ(part.rows, int64_t(rows.size()));
      for (size_t k = 0; k < rows.size(); k++) {
        EXPECT_EQ(part.instances[k], whole.instances[rows[k]]);
        EXPECT_TRUE(std::equal(part.tokens.begin() + ptrdiff_t(k * 16), part.tokens.begin() + ptrdiff_t((k + 1) * 16),
                               whole.tokens.begin() + ptrdiff_t(rows[k] * 16)));
      }
    }
  EXPECT_THROW(loader.batch(1, 3, 0, 2, 3), Error);  // 3 × 2 ranks does not divide 8
}

TEST(DataLoader, PositionsAndEpochs) {
  DataLoader loader(small_config());
  EXPECT_EQ(loader.position(0), std::make_pair(uint64_t(1), int64_t(0)));
  EXPECT_EQ(loader.position(124), std::make_pair(uint64_t(1), int64_t(124)));
  EXPECT_EQ(loader.position(125), std::make_pair(uint64_t(2), int64_t(0)));
  EXPECT_EQ(loader.position(300, 0), std::make_pair(uint64_t(2), int64_t(50)));
  EXPECT_NE(loader.batch_instances(1, 0), loader.batch_instances(2, 0));
}

TEST(DataLoader, InstanceFilterMarksRows) {
  std::vector<uint32_t> ids(64 * 4);
  std::iota(ids.begin(), ids.end(), 10u);
  for (int i = 64; i < 128; i++) ids[size_t(i)] = 5;  // instance 1 is one token 64 times
  std::string path = loader_dir() + "repeat.npy";
  AtomicFile file(path);
  file.write(ids.data(), ids.size() * 4);
  file.commit();
  LoaderConfig config;
  config.files = mix_from_paths({path});
  config.seq_len = 64;
  config.seed = 1;
  config.global_batch = 4;
  Batch plain = DataLoader(config).batch(1, 0);
  config.filter.enabled = true;
  Batch filtered = DataLoader(config).batch(1, 0);
  for (size_t r = 0; r < 4; r++) {
    EXPECT_EQ(plain.keep[r], 1);
    EXPECT_EQ(filtered.keep[r], filtered.instances[r] == 1 ? 0 : 1);
  }
  EXPECT_EQ(plain.tokens, filtered.tokens);  // masked rows keep their tokens; only labels are ignored
}

TEST(DataLoader, FingerprintCoversDataAndOrderSettings) {
  LoaderConfig config = small_config();
  std::string base = DataLoader(config).fingerprint();
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(DataLoader(config).fingerprint(), base);
  auto changed = [&](auto edit) {
    LoaderConfig c = small_config();
    edit(c);
    return DataLoader(c).fingerprint() != base;
  };
  EXPECT_TRUE(changed([](LoaderConfig& c) { c.seed++; }));
  EXPECT_TRUE(changed([](LoaderConfig& c) { c.seq_len = 8; }));
  EXPECT_TRUE(changed([](LoaderConfig& c) { c.filter.enabled = true; }));
  EXPECT_TRUE(changed([](LoaderConfig& c) { std::swap(c.files[0], c.files[1]); }));
  EXPECT_FALSE(changed([](LoaderConfig& c) { c.global_batch = 16; }));
  DataLoader(config).check_fingerprint(base, false);
  // Same name and size, one token different: the content hash notices, and resuming needs the override.
  LoaderConfig edited = small_config();
  edited.files[1].path = write_shifted_tokens("code.npy", 16 * 300, 50001);
  EXPECT_NE(DataLoader(edited).fingerprint(), base);
  EXPECT_THROW(DataLoader(edited).check_fingerprint(base, false), Error);
  DataLoader(edited).check_fingerprint(base, true);
}

TEST(DataAudit, CorrectLoaderHasNoRepeats) {
  DataLoader loader(small_config());
  AuditReport one = audit(loader, {.steps = 125, .world_size = 4, .micro_batch = 1});
  EXPECT_TRUE(one.ok()) << one.text();
  EXPECT_EQ(one.seen[1], 1000u);  // exactly one epoch: every instance once
  EXPECT_EQ(one.seen[0], 0u);
  EXPECT_DOUBLE_EQ(one.expected_epochs, 1.0);
  EXPECT_DOUBLE_EQ(one.actual_epochs, 1.0);
  ASSERT_EQ(one.tokens_per_source.size(), 2u);
  EXPECT_EQ(one.tokens_per_source[0], std::make_pair(std::string("code"), uint64_t(300 * 16)));
  EXPECT_EQ(one.tokens_per_source[1], std::make_pair(std::string("web"), uint64_t(700 * 16)));

  AuditReport longer = audit(loader, {.steps = 300, .world_size = 2});  // 2.4 epochs: repeats across epochs only
  EXPECT_TRUE(longer.ok()) << longer.text();
  EXPECT_DOUBLE_EQ(longer.expected_epochs, 2.4);
  EXPECT_EQ(longer.seen[0] + longer.seen[1] + longer.seen[2] + longer.seen[3], 1000u);
  EXPECT_EQ(longer.seen[3], 400u);  // 2 full epochs + 50 batches x 8 instances of the third
}

TEST(DataAudit, FlagsDoubleSharding) {
  // The bug: each rank's own stream (its row[r::W] slices, epoch after epoch) is strided again by W, so a
  // rank consumes its stream W times too fast and wraps into later epochs within one planned epoch.
  DataLoader loader(small_config());
  const int world = 4;
  const int64_t rank_rows = 8 / world, per_epoch = loader.batches_per_epoch();
  auto local_stream = [&](int rank, int64_t position) {  // element `position` of rank's correct stream
    int64_t step = position / rank_rows;
    auto [epoch, b] = loader.position(step);
    return loader.batch_instances(epoch, b, rank, world)[size_t(position % rank_rows)];
  };
  RankReader buggy = [&](int64_t step, int rank) {
    std::vector<uint32_t> rows;
    for (int64_t k = 0; k < rank_rows; k++) rows.push_back(local_stream(rank, (step * rank_rows + k) * world + rank));
    return rows;
  };
  AuditReport report = audit(loader, {.steps = per_epoch, .world_size = world}, buggy);
  EXPECT_FALSE(report.ok());
  EXPECT_GT(report.repeat_fraction(), 0.2) << report.text();
  EXPECT_GT(report.seen[0], 200u) << report.text();  // and part of the corpus is never seen
  EXPECT_GT(report.actual_epochs, 1.1);
  EXPECT_NE(report.text().find("ERROR"), std::string::npos);
}
