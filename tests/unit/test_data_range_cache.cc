// data/range_cache: ranges come back as they were put, the least recently used go first past the bound, a damaged
// entry is a miss (fetched again), and a new cache on the same directory finds what an earlier one kept.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scratch_dir.h"
#include "replica/data/range_cache.h"

namespace replica::data {
namespace {

namespace fs = std::filesystem;

std::vector<char> filled_bytes(char c, size_t n) { return std::vector<char>(n, c); }

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = replica::testing::scratch_dir("range_cache") / name;
  fs::remove_all(dir);
  return dir;
}

TEST(RangeCache, GivesBackWhatWasPutWithTheSameSizeOnly) {
  RangeCache cache(fresh_dir("roundtrip").string(), 1 << 20);
  cache.put("a", filled_bytes('a', 100));
  std::vector<char> out(100);
  ASSERT_TRUE(cache.get("a", out));
  EXPECT_EQ(out, filled_bytes('a', 100));
  std::vector<char> other_size(99);
  EXPECT_FALSE(cache.get("a", other_size));
  EXPECT_FALSE(cache.get("b", out));
  EXPECT_EQ(cache.bytes(), 100 + sizeof(uint64_t));  // the bytes and their checksum
}

TEST(RangeCache, EvictsTheLeastRecentlyUsedPastTheBound) {
  const fs::path dir = fresh_dir("evict");
  RangeCache cache(dir.string(), 3 * (100 + 8));  // room for three entries of 100 bytes
  cache.put("a", filled_bytes('a', 100));
  cache.put("b", filled_bytes('b', 100));
  cache.put("c", filled_bytes('c', 100));
  std::vector<char> out(100);
  ASSERT_TRUE(cache.get("a", out));  // a is now the most recently used: b goes first
  cache.put("d", filled_bytes('d', 100));
  EXPECT_FALSE(cache.get("b", out));
  EXPECT_TRUE(cache.get("a", out));
  EXPECT_TRUE(cache.get("c", out));
  EXPECT_TRUE(cache.get("d", out));
  EXPECT_LE(cache.bytes(), 3u * 108);
  EXPECT_FALSE(fs::exists(dir / "b.range"));
  cache.put("huge", filled_bytes('h', 1000));  // larger than the whole cache: not kept, nothing evicted for it
  std::vector<char> huge(1000);
  EXPECT_FALSE(cache.get("huge", huge));
  EXPECT_TRUE(cache.get("d", out));
}

TEST(RangeCache, ADamagedEntryIsAMissAndIsRemoved) {
  const fs::path dir = fresh_dir("damaged");
  RangeCache cache(dir.string(), 1 << 20);
  cache.put("a", filled_bytes('a', 100));
  {
    std::fstream f(dir / "a.range", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('x');
  }
  std::vector<char> out(100);
  EXPECT_FALSE(cache.get("a", out));
  EXPECT_FALSE(fs::exists(dir / "a.range"));
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(RangeCache, ALaterCacheOnTheDirectoryFindsItsEntries) {
  const fs::path dir = fresh_dir("restart");
  RangeCache(dir.string(), 1 << 20).put("a", filled_bytes('a', 100));
  RangeCache again(dir.string(), 1 << 20);
  std::vector<char> out(100);
  ASSERT_TRUE(again.get("a", out));
  EXPECT_EQ(out, filled_bytes('a', 100));
  EXPECT_EQ(again.bytes(), 108u);
}

}  // namespace
}  // namespace replica::data
