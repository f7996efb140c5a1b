// RangeCache: one file per range (bytes + XXH3-64), an LRU list over them, eviction to the bound.
#include "replica/data/range_cache.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "replica/core/error.h"

namespace replica::data {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kSuffix = ".range";
constexpr size_t kBlockChecksum = sizeof(uint64_t);
}  // namespace

RangeCache::RangeCache(std::string dir, uint64_t capacity_bytes) : dir_(std::move(dir)), capacity_(capacity_bytes) {
  std::error_code error;
  fs::create_directories(dir_, error);
  check(!error && fs::is_directory(dir_), "data.cache_dir {}: cannot create the directory ({})", dir_,
        error.message());
  std::vector<std::pair<fs::file_time_type, fs::directory_entry>> found;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_))
    if (e.is_regular_file() && e.path().extension() == kSuffix) found.emplace_back(e.last_write_time(), e);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [time, e] : found) {
    const std::string key = e.path().stem().string();
    lru_.push_back(key);
    entries_[key] = {uint64_t(e.file_size()), std::prev(lru_.end())};
    total_ += e.file_size();
  }
}

std::string RangeCache::file_of(const std::string& key) const { return (fs::path(dir_) / (key + std::string(kSuffix))).string(); }

void RangeCache::forget(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  total_ -= it->second.bytes;
  lru_.erase(it->second.at);
  entries_.erase(it);
}

bool RangeCache::get(const std::string& key, std::span<char> out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.bytes != out.size() + kBlockChecksum) return false;
    lru_.splice(lru_.end(), lru_, it->second.at);
  }
  std::ifstream in(file_of(key), std::ios::binary);
  uint64_t stored = 0;
  in.read(out.data(), std::streamsize(out.size()));
  in.read(reinterpret_cast<char*>(&stored), kBlockChecksum);
  if (in && in.peek() == EOF && stored == XXH3_64bits(out.data(), out.size())) return true;
  // Damaged, or removed by another process sharing the directory: a miss, fetched again.
  std::lock_guard<std::mutex> lock(mutex_);
  std::error_code ignored;
  fs::remove(file_of(key), ignored);
  forget(key);
  return false;
}

void RangeCache::put(const std::string& key, std::span<const char> bytes) {
  const uint64_t size = bytes.size() + kBlockChecksum;
  if (size > capacity_) return;
  std::vector<std::string> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.count(key)) return;
    while (total_ + size > capacity_ && !lru_.empty()) {
      evicted.push_back(lru_.front());
      forget(lru_.front());
    }
    lru_.push_back(key);
    entries_[key] = {size, std::prev(lru_.end())};
    total_ += size;
  }
  std::error_code ignored;
  for (const std::string& k : evicted) fs::remove(file_of(k), ignored);
  // A temporary name of this process's own, renamed: a reader never sees half an entry.
  const std::string path = file_of(key), temp = fmt::format("{}.{}.tmp", path, ::getpid());
  const uint64_t checksum = XXH3_64bits(bytes.data(), bytes.size());
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.write(reinterpret_cast<const char*>(&checksum), kBlockChecksum);
  out.close();
  if (!out || std::rename(temp.c_str(), path.c_str()) != 0) {  // a full disk costs the cache, not the run
    fs::remove(temp, ignored);
    std::lock_guard<std::mutex> lock(mutex_);
    forget(key);
  }
}

uint64_t RangeCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

}  // namespace replica::data
