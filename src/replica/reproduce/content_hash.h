// What a checkpoint is, as a hash of its content, so that an evaluation cached under it is valid wherever the
// checkpoint is copied and invalid the moment a byte of it changes: a replica checkpoint's MANIFEST.json (every
// file's size and XXH3-128, ckpt/manifest.h), or for an HF model directory the sha256 of config.json and of every
// *.safetensors file and index (the digests the Hugging Face hub shows for its LFS files).
#pragma once
#include <string>

namespace replica::reproduce {

class FileHashCache;

// 64 lowercase hex digits. `hashes`: where an HF directory's file hashes are remembered between runs (none: each file
// is read).
std::string checkpoint_content_hash(const std::string& dir, FileHashCache* hashes = nullptr);

// The first 16 hex digits of a hash: how directories and the console name a checkpoint or a suite.
inline std::string short_hash(const std::string& hash) { return hash.substr(0, 16); }

// sha256 of a file, read in chunks (a 7B shard is never in memory at once).
std::string file_sha256(const std::string& path);

}  // namespace replica::reproduce
