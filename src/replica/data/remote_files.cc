// The remote-file registry: identities (HEAD answers) by URL, the JSON index that keeps them across starts, and the
// ByteSource that reads a remote file by range requests through the range cache.
#include "replica/data/remote_files.h"

#include <unistd.h>
#include <xxhash.h>

#include <charconv>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/threads.h"
#include "replica/data/range_cache.h"

namespace replica::data {
namespace {

constexpr const char* kIndexFormat = "replica-remote-files-v1";

struct Known {
  RemoteIdentity identity;
  std::optional<uint64_t> content_hash;
};

struct Registry {
  std::mutex mutex;
  RemoteConfig config;
  std::map<std::string, Known> files;
  bool dirty = false;
  std::shared_ptr<RangeCache> cache;
};

std::optional<uint64_t> parse_hex_uint64(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

Registry& registry() {
  static Registry r;
  return r;
}

std::map<std::string, Known> read_index(const std::string& path) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not a remote index ({}); remove it to HEAD the files again", path, e.what());
  }
  check(root.is_object() && root.contains("format") && root["format"] == kIndexFormat && root.contains("files") &&
            root["files"].is_object(),
        "{}: not a remote index (expected an object with \"format\": \"{}\" and \"files\")", path, kIndexFormat);
  std::map<std::string, Known> files;
  for (const auto& item : root["files"].items()) {
    // Named references, not a structured binding: a lambda may not capture one before C++20's P1091 (clang 14).
    const std::string& url = item.key();
    const nlohmann::json& entry = item.value();
    auto text = [&](const char* key) -> std::string {
      check(entry.is_object() && entry.contains(key) && entry[key].is_string(), "{}: file {}: '{}' must be a string",
            path, url, key);
      return entry[key].get<std::string>();
    };
    check(entry.is_object() && entry.contains("size") && entry["size"].is_number_unsigned(),
          "{}: file {}: 'size' must be an unsigned integer", path, url);
    Known known{{entry["size"].get<uint64_t>(), text("etag"), text("last_modified")}, std::nullopt};
    if (entry.contains("content_hash")) {
      const std::string hash = text("content_hash");
      known.content_hash = parse_hex_uint64(hash);
      check(hash.size() == 16 && known.content_hash, "{}: file {}: 'content_hash' must be 16 hex digits", path, url);
    }
    files.emplace(url, std::move(known));
  }
  return files;
}

// Mutex held. A temporary name of this process's own, renamed: ranks of one run may share run.dir.
void write_index(const Registry& r) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [url, known] : r.files) {
    nlohmann::json entry = {{"size", known.identity.size},
                            {"etag", known.identity.etag},
                            {"last_modified", known.identity.last_modified}};
    if (known.content_hash) entry["content_hash"] = fmt::format("{:016x}", *known.content_hash);
    files[url] = std::move(entry);
  }
  const std::string& path = r.config.index_path;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  const std::string temp = fmt::format("{}.{}", path, ::getpid());
  write_text_file_atomic(temp, nlohmann::json{{"format", kIndexFormat}, {"files", files}}.dump(1) + "\n");
  check(std::rename(temp.c_str(), path.c_str()) == 0, "{}: cannot write the remote index", path);
}

class RemoteFile : public ByteSource {
 public:
  RemoteFile(std::string url, RemoteIdentity identity, HttpOptions http, std::shared_ptr<RangeCache> cache)
      : url_(std::move(url)), identity_(std::move(identity)), http_(http), cache_(std::move(cache)) {}

  const std::string& path() const override { return url_; }
  uint64_t size() const override { return identity_.size; }

  void read(uint64_t offset, std::span<char> out) const override {
    if (!cache_) return http_get_range(url_, identity_, offset, out, http_);
    // The key holds the validators: a file that changes on the server never reads another version's bytes.
    const std::string text = fmt::format("{}\n{}\n{}\n{}\n{}\n{}", url_, identity_.size, identity_.etag,
                                         identity_.last_modified, offset, out.size());
    const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
    const std::string key = fmt::format("{:016x}{:016x}", h.high64, h.low64);
    if (cache_->get(key, out)) return;
    http_get_range(url_, identity_, offset, out, http_);
    cache_->put(key, out);
  }

  std::optional<uint64_t> remembered_hash() const override {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.files.find(url_);
    return it == r.files.end() ? std::nullopt : it->second.content_hash;
  }

  void remember_hash(uint64_t hash) const override {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.files[url_].content_hash = hash;
    r.dirty = true;
  }

 private:
  std::string url_;
  RemoteIdentity identity_;
  HttpOptions http_;
  std::shared_ptr<RangeCache> cache_;
};

}  // namespace

void configure_remote_files(const RemoteConfig& config) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.config = config;
  r.files.clear();
  r.dirty = false;
  r.cache = config.cache_dir.empty() ? nullptr : std::make_shared<RangeCache>(config.cache_dir, uint64_t(config.cache_bytes));
  if (!config.index_path.empty() && std::filesystem::exists(config.index_path))
    r.files = read_index(config.index_path);
}

void stat_remote_files(const std::vector<std::string>& paths) {
  Registry& r = registry();
  std::vector<std::string> unknown;
  HttpOptions http;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const std::string& p : paths)
      if (is_url(p) && !r.files.count(p)) unknown.push_back(p);
    http = r.config.http;
  }
  if (unknown.empty()) return;
  std::vector<RemoteIdentity> found(unknown.size());
  for_each_concurrently(unknown.size(), kConnections, [&](size_t i) { found[i] = http_head(unknown[i], http); });
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < unknown.size(); i++) r.files[unknown[i]] = {found[i], std::nullopt};
  r.dirty = true;  // written by save_remote_index, once the run holds its directory
}

std::shared_ptr<const ByteSource> open_remote_file(const std::string& url) {
  stat_remote_files({url});
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return std::make_shared<const RemoteFile>(url, r.files.at(url).identity, r.config.http, r.cache);
}

void save_remote_index() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.dirty && !r.config.index_path.empty()) write_index(r);
  r.dirty = false;
}

}  // namespace replica::data
