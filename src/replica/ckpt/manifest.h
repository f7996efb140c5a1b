// MANIFEST.json of a checkpoint directory: every file's size and XXH3-128, written last so that a
// directory with a manifest is complete; verify_manifest() re-hashes every file and names the one that fails.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace replica::ckpt {

inline constexpr int kManifestVersion = 1;
inline constexpr const char* kManifestHash = "xxh3_128";

struct FileDigest {
  std::string name;  // file name inside the directory
  uint64_t size = 0;
  std::string xxh3_128;  // 32 lowercase hex digits
};

// Size and XXH3-128 of a file (memory-mapped, hashed in one pass).
FileDigest digest_file(const std::string& path);

// Writes dir/MANIFEST.json (atomically) for `files` (names inside dir), hashing each.
void write_manifest(const std::string& dir, const std::vector<std::string>& files);

// Raises replica::Error naming the file when MANIFEST.json is missing or malformed, has another version or hash, does
// not list every file of `required` (those its reader opens), or a listed file is missing, has another size
// (truncated) or another checksum (corrupted).
void verify_manifest(const std::string& dir, const std::vector<std::string>& required);

}  // namespace replica::ckpt
