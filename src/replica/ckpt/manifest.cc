// Checkpoint manifests: sizes and XXH3-128 checksums.
#include "replica/ckpt/manifest.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/json_integer.h"
#include "replica/core/mapped_file.h"

namespace replica::ckpt {

namespace fs = std::filesystem;

FileDigest digest_file(const std::string& path) {
  // Hashed 64 MiB at a time, each chunk's pages unmapped after it: verifying a 7B checkpoint never holds its 29 GB
  // of weights resident (the streamed hash equals the one-shot XXH3_128bits).
  MappedFile file(path);
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(), XXH3_freeState);
  check(state != nullptr && XXH3_128bits_reset(state.get()) == XXH_OK, "{}: cannot start its checksum", path);
  constexpr size_t kChunk = size_t(64) << 20;
  for (size_t at = 0; at < file.size(); at += kChunk) {
    const size_t n = std::min(kChunk, file.size() - at);
    XXH3_128bits_update(state.get(), file.data() + at, n);
    file.drop_pages(at, at + n);
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state.get());
  return {fs::path(path).filename().string(), file.size(), fmt::format("{:016x}{:016x}", h.high64, h.low64)};
}

void write_manifest(const std::string& dir, const std::vector<std::string>& files) {
  nlohmann::json listed = nlohmann::json::object();
  for (const std::string& name : files) {
    const FileDigest d = digest_file((fs::path(dir) / name).string());
    listed[name] = {{"size", d.size}, {"xxh3_128", d.xxh3_128}};
  }
  const nlohmann::json manifest = {{"version", kManifestVersion}, {"hash", kManifestHash}, {"files", listed}};
  write_text_file_atomic((fs::path(dir) / "MANIFEST.json").string(), manifest.dump(2) + "\n");
}

void verify_manifest(const std::string& dir, const std::vector<std::string>& required) {
  const fs::path path = fs::path(dir) / "MANIFEST.json";
  check(fs::exists(path), "{}: missing MANIFEST.json (an incomplete or damaged checkpoint)", dir);
  nlohmann::json files;
  try {
    const nlohmann::json manifest = nlohmann::json::parse(read_text_file(path.string()));
    check(manifest.is_object(), "{}: not a manifest (expected a JSON object)", path.string());
    // A manifest of another format would be checked by rules it was not written for.
    check(manifest.contains("version") && manifest["version"] == kManifestVersion,
          "{}: 'version' is {}, expected {} (the manifest format this replica writes and reads)", path.string(),
          manifest.contains("version") ? manifest["version"].dump() : "missing", kManifestVersion);
    check(manifest.contains("hash") && manifest["hash"] == kManifestHash, "{}: 'hash' is {}, expected \"{}\"",
          path.string(), manifest.contains("hash") ? manifest["hash"].dump() : "missing", kManifestHash);
    files = manifest.at("files");
    check(files.is_object() && !files.empty(), "{}: lists no files", path.string());
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed manifest ({})", path.string(), e.what());
  }
  // A file the reader needs but the manifest leaves out would be read unchecked.
  for (const std::string& name : required)
    check(files.contains(name),
          "{}: does not list {}, which the checkpoint holds and replica reads: the file cannot be "
          "verified (an edited or damaged manifest)",
          path.string(), name);
  for (auto& [name, entry] : files.items()) {
    // The manifest lists the files of its own directory: a path would have it hash any file on the machine.
    check(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos,
          "{}: lists '{}', which is not a file name in the checkpoint directory", path.string(), name);
    const fs::path file = fs::path(dir) / name;
    check(fs::exists(file), "{}: missing (listed in MANIFEST.json)", file.string());
    uint64_t size = 0;
    std::string hash;
    try {
      size = uint64_t(json_integer(entry, "size", path.string() + ": " + name, 0));
      hash = entry.at("xxh3_128").get<std::string>();
    } catch (const nlohmann::json::exception& e) {
      fail("{}: malformed entry for {} ({})", path.string(), name, e.what());
    }
    const FileDigest d = digest_file(file.string());
    check(d.size == size, "{}: {} bytes, MANIFEST.json says {} (truncated or replaced)", file.string(), d.size, size);
    check(d.xxh3_128 == hash, "{}: checksum mismatch (XXH3-128 {}, MANIFEST.json says {}): the file is corrupted",
          file.string(), d.xxh3_128, hash);
  }
}

}  // namespace replica::ckpt
