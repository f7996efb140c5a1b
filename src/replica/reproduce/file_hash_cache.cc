// sha256 of files, remembered by path, size and modification time.
#include "replica/reproduce/file_hash_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/reproduce/content_hash.h"

namespace replica::reproduce {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFileHashesFormat = "replica-file-hashes-v1";

struct Stat {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

Stat stat_of(const std::string& file) {
  struct stat st {};
  check(::stat(file.c_str(), &st) == 0, "{}: cannot stat it to hash it ({})", file, std::strerror(errno));
  return {uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec)};
}

std::string absolute(const std::string& file) { return fs::absolute(file).lexically_normal().string(); }

}  // namespace

FileHashCache::FileHashCache(std::string path) : path_(std::move(path)) {
  if (path_.empty() || !fs::exists(path_)) return;
  try {
    const json j = json::parse(read_text_file(path_));
    check(j.value("format", "") == kFileHashesFormat, "{}: not replica's file-hash cache (format '{}', expected '{}')", path_,
          j.value("format", ""), kFileHashesFormat);
    for (const auto& [file, e] : j.at("files").items())
      entries_[file] = {e.at("size").get<uint64_t>(), e.at("mtime_ns").get<int64_t>(),
                        e.at("sha256").get<std::string>()};
  } catch (const json::exception& e) {
    fail("{}: a corrupt file-hash cache ({}); delete it and the hashes are computed again", path_, e.what());
  }
}

std::string FileHashCache::sha256(const std::string& file) {
  const std::string key = absolute(file);
  const Stat now = stat_of(file);
  if (const auto it = entries_.find(key);
      it != entries_.end() && it->second.size == now.size && it->second.mtime_ns == now.mtime_ns) {
    reused_++;
    return it->second.sha256;
  }
  const std::string hash = file_sha256(file);
  computed_++;
  // Stat again: a file that changed while it was read is not remembered as either version.
  const Stat after = stat_of(file);
  if (after.size == now.size && after.mtime_ns == now.mtime_ns) {
    entries_[key] = {now.size, now.mtime_ns, hash};
    save();
  }
  return hash;
}

void FileHashCache::remember(const std::string& file, const std::string& sha256) {
  const Stat now = stat_of(file);
  entries_[absolute(file)] = {now.size, now.mtime_ns, sha256};
  save();
}

void FileHashCache::save() const {
  if (path_.empty()) return;
  json files = json::object();
  for (const auto& [file, e] : entries_)
    files[file] = {{"size", e.size}, {"mtime_ns", e.mtime_ns}, {"sha256", e.sha256}};
  write_text_file_atomic(path_, json{{"format", kFileHashesFormat}, {"files", files}}.dump(1) + "\n");
}

}  // namespace replica::reproduce
