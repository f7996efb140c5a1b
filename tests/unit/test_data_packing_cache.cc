// The packing cache in packing.work_dir: a cached dataset serves the same instances as one packed from scratch,
// a cache is used only for the same files and settings, and a corrupt cache file is packed again and rewritten.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/data/loader.h"
#include "replica/data/packed_dataset.h"
#include "replica/data/packing_cache.h"
#include "scratch_dir.h"

using namespace replica;
using namespace replica::data;

namespace {

constexpr int64_t kSeqLen = 64, kGroupSize = 3;

std::filesystem::path packing_cache_dir() { return replica::testing::scratch_dir("packing_cache"); }

// Seven files of EOS-terminated documents with many equal lengths (numpy's tie order matters), some longer than
// the sequence, some tails without an EOS.
std::vector<MixEntry> random_files(uint64_t seed) {
  std::mt19937_64 gen(seed);
  const std::vector<uint64_t> lengths = {1, 3, 16, 32, 33, 63, 64, 65, 130};
  std::vector<std::string> paths;
  for (int f = 0; f < 7; f++) {
    std::vector<uint32_t> tokens;
    for (size_t d = 0, docs = 5 + gen() % 30; d < docs; d++) {
      for (uint64_t t = 1, n = lengths[gen() % lengths.size()]; t < n; t++)
        tokens.push_back(1 + uint32_t(gen() % 1000));
      tokens.push_back(kDolma2Eos);
    }
    if (f % 3 == 0) tokens.push_back(5);
    paths.push_back((packing_cache_dir() / fmt::format("s{}_f{}.npy", seed, f)).string());
    AtomicFile file(paths.back());
    file.write(tokens.data(), tokens.size() * sizeof(uint32_t));
    file.commit();
  }
  return mix_from_paths(paths);
}

PackedDataset packed(const std::vector<MixEntry>& files, const std::string& work_dir) {
  PackingConfig config{Packing::obfd, kGroupSize, LongDocStrategy::truncate, work_dir};
  return PackedDataset(files, kSeqLen, TokenDtype::u32, kDolma2VocabSize, config);
}

// Every instance's tokens and document lengths.
std::vector<std::vector<int32_t>> contents(const PackedDataset& set) {
  std::vector<std::vector<int32_t>> out;
  for (uint64_t i = 0; i < set.num_instances(); i++) {
    std::vector<int32_t> row(size_t(set.seq_len()));
    set.read_instance(i, row.data());
    const std::vector<int32_t> lengths = set.document_lengths(i);
    row.insert(row.end(), lengths.begin(), lengths.end());
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<std::string> cache_files(const std::string& work_dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(work_dir)) out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string cache_path_of_group(const std::vector<MixEntry>& files, size_t group, const std::string& work_dir) {
  std::vector<TokenFile> tokens;
  for (size_t f = group * kGroupSize; f < std::min(files.size(), (group + 1) * kGroupSize); f++)
    tokens.emplace_back(files[f].path, TokenDtype::u32);
  return packing_cache_path(work_dir, packing_cache_key(tokens, kSeqLen, kDolma2Eos, LongDocStrategy::truncate));
}

}  // namespace

TEST(PackingCache, ServesTheInstancesOfAFreshPacking) {
  const std::vector<MixEntry> files = random_files(1);
  const std::string work_dir = (packing_cache_dir() / "same").string();
  const PackedDataset fresh = packed(files, "");
  const PackedDataset first = packed(files, work_dir);
  ASSERT_EQ(first.num_groups(), 3u);
  EXPECT_EQ(first.groups_from_cache(), 0u);
  EXPECT_EQ(cache_files(work_dir).size(), first.num_groups());  // one file per group, no temp files left
  const PackedDataset second = packed(files, work_dir);
  EXPECT_EQ(second.groups_from_cache(), second.num_groups());
  ASSERT_GT(fresh.num_instances(), 10u);
  EXPECT_EQ(contents(first), contents(fresh));
  EXPECT_EQ(contents(second), contents(fresh));
}

TEST(PackingCache, IsKeyedByContentAndSettingsNotPaths) {
  const std::vector<MixEntry> files = random_files(2);
  auto key = [](const std::vector<std::string>& paths, uint64_t seq_len = kSeqLen, uint32_t eos = kDolma2Eos,
                LongDocStrategy strategy = LongDocStrategy::truncate) {
    std::vector<TokenFile> group;
    for (const std::string& p : paths) group.emplace_back(p, TokenDtype::u32);
    return packing_cache_key(group, seq_len, eos, strategy);
  };
  const std::string a = files[0].path, b = files[1].path, c = files[2].path;
  const std::string same = key({a, b, c});
  EXPECT_NE(same, key({a, b, c}, 2 * kSeqLen));
  EXPECT_NE(same, key({a, b, c}, kSeqLen, kDolma2Eos, LongDocStrategy::fragment));
  EXPECT_NE(same, key({a, b, c}, kSeqLen, 0));
  EXPECT_NE(same, key({b, a, c}));  // the order of a group's files is part of its packing
  const std::string moved = (packing_cache_dir() / "moved.npy").string();
  std::filesystem::copy_file(a, moved);
  EXPECT_EQ(same, key({moved, b, c}));
  const std::vector<uint32_t> tokens = {1, 2, kDolma2Eos};
  AtomicFile changed((packing_cache_dir() / "changed.npy").string());
  changed.write(tokens.data(), tokens.size() * sizeof(uint32_t));
  changed.commit();
  EXPECT_NE(same, key({(packing_cache_dir() / "changed.npy").string(), b, c}));
}

TEST(PackingCache, ACorruptCacheFileIsPackedAgainAndRewritten) {
  const std::vector<MixEntry> files = random_files(3);
  const std::string work_dir = (packing_cache_dir() / "corrupt").string();
  const std::vector<std::vector<int32_t>> expected = contents(packed(files, work_dir));
  const std::string path = cache_path_of_group(files, 1, work_dir);
  const std::vector<char> good = read_file(path);
  auto write = [&](const std::vector<char>& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  };
  std::vector<char> flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  const std::vector<char> truncated(good.begin(), good.end() - 9);
  const std::vector<char> other_group = read_file(cache_path_of_group(files, 0, work_dir));
  for (const std::vector<char>& bad : {flipped, truncated, other_group, std::vector<char>{}}) {
    write(bad);
    const PackedDataset set = packed(files, work_dir);
    EXPECT_EQ(set.groups_from_cache(), set.num_groups() - 1);
    EXPECT_EQ(contents(set), expected);
    EXPECT_EQ(read_file(path), good);  // rewritten
  }
}

// Review 2026-12-03 case 119: the cache only saves time, so one that cannot be written (a full disk; here its file
// name is taken by a directory) is a warning and the instances are served all the same.
TEST(PackingCache, ACacheThatCannotBeWrittenIsAWarningNotAnError) {
  const std::vector<MixEntry> files = random_files(4);
  const std::string work_dir = (packing_cache_dir() / "unwritable").string();
  const std::vector<std::vector<int32_t>> expected = contents(packed(files, ""));
  const std::string path = cache_path_of_group(files, 1, work_dir);
  std::filesystem::create_directories(path);
  ::testing::internal::CaptureStderr();
  const PackedDataset set = packed(files, work_dir);
  EXPECT_EQ(contents(set), expected);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning: packing cache (data.work_dir=" + work_dir + "): cannot write it"), std::string::npos)
      << err;
  EXPECT_TRUE(std::filesystem::is_directory(path));
}

TEST(PackingCache, ReadRefusesTablesThatAreNotAPacking) {
  const std::string path = (packing_cache_dir() / "tables.bin").string();
  const std::string key(32, 'a');
  // Two documents of 40 and 30 tokens cannot share an instance of 64.
  PackedInstances p{{{0, 40}, {40, 70}}, {0, 2}, {0, 1}};
  write_packing_cache(path, key, p, 0);
  try {
    read_packing_cache(path, key, 70, kSeqLen);
    FAIL() << "an overfull instance was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": instance 0 holds 70 tokens, more than 64"), std::string::npos)
        << e.what();
  }
  p = {{{0, 40}, {40, 70}}, {0, 1, 2}, {0, 1}};
  write_packing_cache(path, key, p, 0);
  EXPECT_EQ(read_packing_cache(path, key, 70, kSeqLen)->documents_by_instance, p.documents_by_instance);
  EXPECT_THROW(read_packing_cache(path, key, 69, kSeqLen), Error);  // a document beyond the group's tokens
  EXPECT_THROW(read_packing_cache(path, std::string(32, 'b'), 70, kSeqLen), Error);
  p = {{{0, 40}, {40, 70}}, {0, 1, 2}, {1, 1}};
  write_packing_cache(path, key, p, 0);
  EXPECT_THROW(read_packing_cache(path, key, 70, kSeqLen), Error);  // a document in two instances
  EXPECT_FALSE(read_packing_cache((packing_cache_dir() / "absent.bin").string(), key, 70, kSeqLen));
}

TEST(PackingCache, IsNotPartOfTheDataFingerprint) {
  LoaderConfig config;
  config.files = random_files(4);
  config.seq_len = kSeqLen;
  config.global_batch = 2;
  config.packing = {Packing::obfd, kGroupSize, LongDocStrategy::truncate, ""};
  const std::string plain = DataLoader(config).fingerprint();
  config.packing.work_dir = (packing_cache_dir() / "fingerprint").string();
  EXPECT_EQ(DataLoader(config).fingerprint(), plain);  // written
  EXPECT_EQ(DataLoader(config).fingerprint(), plain);  // read
}
