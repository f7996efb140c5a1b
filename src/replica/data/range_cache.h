// The bounded local cache of remote bytes (data.cache_dir, data.cache_bytes): each range read from a server is kept
// as one file named by its key, with an XXH3-64 of its bytes after them, and the least recently used ranges are
// removed when the total would pass the bound. A later start (or epoch, or evaluation) reads them from disk.
#pragma once
#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>

namespace replica::data {

class RangeCache {
 public:
  // Creates `dir` if needed and takes stock of what is there (oldest modification first). Raises Error naming the
  // directory when it cannot be created.
  RangeCache(std::string dir, uint64_t capacity_bytes);

  // Fills `out` and returns true when the range `key` is cached with exactly out.size() bytes and its checksum
  // holds; a damaged entry is removed and reported as absent.
  bool get(const std::string& key, std::span<char> out);
  // Keeps `bytes` under `key` (written to a temporary name, then renamed), evicting the least recently used
  // entries first. A range larger than the whole cache is not kept.
  void put(const std::string& key, std::span<const char> bytes);

  uint64_t bytes() const;  // what the entries hold now, checksums included

 private:
  std::string file_of(const std::string& key) const;
  void forget(const std::string& key);  // mutex held

  std::string dir_;
  uint64_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::string> lru_;  // keys, least recently used first
  struct Entry {
    uint64_t bytes;
    std::list<std::string>::iterator at;
  };
  std::unordered_map<std::string, Entry> entries_;
  uint64_t total_ = 0;
};

}  // namespace replica::data
