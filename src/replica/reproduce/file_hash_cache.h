// The sha256 of a checkpoint's files, remembered between runs of `replica reproduce` by (absolute path, size,
// modification time) in DIR/cache/file_hashes.json, so that rerunning as new checkpoints arrive does not read every
// 7B safetensors shard again (15 GB per checkpoint) only to learn that it is the one seen last time. A file whose size
// or modification time changed is hashed again — the rule make and rsync use; a file rewritten with the same size
// and its old modification time restored would be taken for the old one.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace replica::reproduce {

class FileHashCache {
 public:
  // Loads `path` when it exists (replica::Error naming it when it is not this cache's JSON); empty: remember in
  // memory only.
  explicit FileHashCache(std::string path);

  // The file's sha256 (64 hex digits): remembered, or read and remembered (the cache file rewritten atomically).
  std::string sha256(const std::string& file);
  // A hash computed elsewhere (a download hashed as it arrived), for the file as it is now.
  void remember(const std::string& file, const std::string& sha256);

  int64_t computed() const { return computed_; }  // files read to hash them in this process
  int64_t reused() const { return reused_; }      // hashes taken from the cache

 private:
  struct Entry {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    std::string sha256;
  };
  void save() const;
  std::string path_;
  std::map<std::string, Entry> entries_;  // by absolute path
  int64_t computed_ = 0, reused_ = 0;
};

}  // namespace replica::reproduce
