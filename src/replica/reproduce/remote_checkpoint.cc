// Fetching an HF checkpoint directory over HTTP(S) into the reproduce cache, checked.
#include "replica/reproduce/remote_checkpoint.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <vector>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/sha256.h"

namespace replica::reproduce {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFetchedFormat = "replica-fetched-checkpoint-v1";
constexpr size_t kChunk = size_t(16) << 20;  // bytes per range request

std::string join_url(const std::string& dir, const std::string& name) {
  return dir.ends_with('/') ? dir + name : dir + "/" + name;
}

// An ETag that is a sha256: "<64 hex>" (the Hugging Face hub's X-Linked-Etag and ETag of LFS files).
std::string sha256_etag(const std::string& etag) {
  static const std::regex pattern(R"re(^(?:W/)?"?([0-9a-f]{64})"?$)re");
  std::smatch m;
  return std::regex_match(etag, m, pattern) ? m[1].str() : "";
}

// Reads `url` (of `identity`) to `target`, through a temp name; returns its sha256.
std::string download(const std::string& url, const data::RemoteIdentity& identity, const fs::path& target,
                     const data::HttpOptions& http) {
  const fs::path temp = target.string() + ".fetching";
  Sha256 sha;
  {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(temp.c_str(), "wb"), std::fclose);
    check(out != nullptr, "{}: cannot create it to fetch {} into", temp.string(), url);
    std::vector<char> chunk(std::min<uint64_t>(kChunk, identity.size));
    for (uint64_t at = 0; at < identity.size; at += chunk.size()) {
      const size_t n = size_t(std::min<uint64_t>(chunk.size(), identity.size - at));
      data::http_get_range(url, identity, at, {chunk.data(), n}, http);
      sha.update(chunk.data(), n);
      check(std::fwrite(chunk.data(), 1, n, out.get()) == n, "{}: write error fetching {}", temp.string(), url);
    }
    check(std::fflush(out.get()) == 0, "{}: write error fetching {}", temp.string(), url);
  }
  const std::string hash = sha.hex();
  const std::string published = sha256_etag(identity.etag);
  if (!published.empty() && published != hash) {
    fs::remove(temp);
    fail("{}: the bytes fetched hash to sha256 {}, but the server's ETag says {}: the download is corrupt", url, hash,
         published);
  }
  fs::rename(temp, target);
  return hash;
}

json identity_json(const data::RemoteIdentity& id) {
  return {{"size", id.size}, {"etag", id.etag}, {"last_modified", id.last_modified}};
}

int64_t mtime_ns(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return -1;
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec);
}

// A file fetched before that is still as fetched, on the server (`now`) and here.
bool unchanged(const json& record, const std::string& name, const data::RemoteIdentity& now, const fs::path& local) {
  if (!record.contains("files") || !record["files"].contains(name)) return false;
  const json& before = record["files"][name];
  return before["server"] == identity_json(now) && fs::exists(local) && fs::file_size(local) == now.size &&
         mtime_ns(local) == before["mtime_ns"];
}

// The files of the HF directory at `url`: config.json, and the index with its shards or model.safetensors. The
// index is read from the local copy when it is unchanged (a rerun sends no GET).
std::vector<std::string> remote_files(const std::string& url, const fs::path& dir, const json& record,
                                      const data::HttpOptions& http,
                                      std::map<std::string, data::RemoteIdentity>& identities) {
  std::vector<std::string> names = {"config.json"};
  identities["config.json"] = data::http_head(join_url(url, "config.json"), http);
  const std::string index_url = join_url(url, "model.safetensors.index.json");
  if (const std::optional<data::RemoteIdentity> index = data::http_head_if_found(index_url, http)) {
    identities["model.safetensors.index.json"] = *index;
    names.push_back("model.safetensors.index.json");
    std::string text;
    if (unchanged(record, "model.safetensors.index.json", *index, dir / "model.safetensors.index.json")) {
      text = read_text_file((dir / "model.safetensors.index.json").string());
    } else {
      text.assign(index->size, '\0');
      data::http_get_range(index_url, *index, 0, {text.data(), text.size()}, http);
    }
    std::set<std::string> shards;
    try {
      const json parsed = json::parse(text);
      for (auto& [tensor, file] : parsed.at("weight_map").items()) shards.insert(file.get<std::string>());
    } catch (const json::exception& e) {
      fail("{}: invalid index ({})", index_url, e.what());
    }
    for (const std::string& shard : shards) {
      // The same rule as a local index (ckpt/model_tensors.cc): shards are file names of the directory.
      check(!shard.empty() && shard != "." && shard != ".." && shard.find('/') == std::string::npos,
            "{}: a shard '{}', which is not a file name in the checkpoint directory", index_url, shard);
      identities[shard] = data::http_head(join_url(url, shard), http);
      names.push_back(shard);
    }
  } else {
    identities["model.safetensors"] = data::http_head(join_url(url, "model.safetensors"), http);
    names.push_back("model.safetensors");
  }
  return names;
}

}  // namespace

std::string fetch_remote_checkpoint(const std::string& url, const std::string& cache_dir, FileHashCache& hashes,
                                    const data::HttpOptions& http, const std::function<void(const std::string&)>& say) {
  const fs::path dir = fs::path(cache_dir) / "remote" / sha256_hex(url.data(), url.size()).substr(0, 16);
  fs::create_directories(dir);
  const fs::path record_path = dir / "FETCHED.json";
  json record = json::object();
  if (fs::exists(record_path)) {
    try {
      record = json::parse(read_text_file(record_path.string()));
      check(record.value("format", "") == kFetchedFormat && record.value("url", "") == url,
            "{}: not the fetch record of {} (delete the directory to fetch it again)", record_path.string(), url);
    } catch (const json::exception& e) {
      fail("{}: corrupt ({}); delete {} to fetch {} again", record_path.string(), e.what(), dir.string(), url);
    }
  }
  std::map<std::string, data::RemoteIdentity> identities;
  const std::vector<std::string> names = remote_files(url, dir, record, http, identities);
  json files = json::object();
  int64_t fetched = 0;
  for (const std::string& name : names) {
    const data::RemoteIdentity& id = identities.at(name);
    const std::string file_url = join_url(url, name);
    const fs::path local = dir / name;
    const json* before = record.contains("files") && record["files"].contains(name) ? &record["files"][name] : nullptr;
    if (before) {
      check((*before)["server"] == identity_json(id),
            "{}: the file changed on the server since it was fetched ({} then, {} now): a reference checkpoint must "
            "not change under a reproduction; delete {} to fetch the new one",
            file_url, (*before)["server"].dump(), identity_json(id).dump(), dir.string());
      if (unchanged(record, name, id, local)) {
        files[name] = *before;
        hashes.remember(local.string(), (*before)["sha256"].get<std::string>());
        continue;
      }
      say(fmt::format("  {}: the local copy changed since it was fetched: fetching it again", local.string()));
    }
    const std::string hash = download(file_url, id, local, http);
    hashes.remember(local.string(), hash);
    files[name] = {{"server", identity_json(id)}, {"sha256", hash}, {"mtime_ns", mtime_ns(local)}};
    fetched++;
    say(fmt::format("  fetched {} ({} bytes, sha256 {})", file_url, id.size, hash.substr(0, 16)));
    // Recorded after each file, so an interrupted fetch resumes with the next one.
    write_text_file_atomic(
        record_path.string(),
        json{{"format", kFetchedFormat}, {"url", url}, {"files", files}, {"complete", false}}.dump(1) + "\n");
  }
  write_text_file_atomic(record_path.string(),
                         json{{"format", kFetchedFormat}, {"url", url}, {"files", files}, {"complete", true}}.dump(1) + "\n");
  if (fetched == 0) say(fmt::format("  {}: fetched before, unchanged on the server ({})", url, dir.string()));
  return dir.string();
}

}  // namespace replica::reproduce
