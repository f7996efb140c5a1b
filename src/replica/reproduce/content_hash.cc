// Content hashes of replica checkpoints and HF model directories.
#include "replica/reproduce/content_hash.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "replica/ckpt/checkpoint.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/sha256.h"
#include "replica/reproduce/file_hash_cache.h"

namespace replica::reproduce {
namespace fs = std::filesystem;

std::string file_sha256(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  check(f != nullptr, "{}: cannot open to hash it", path);
  Sha256 sha;
  std::vector<char> chunk(size_t(1) << 20);
  size_t n;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), f.get())) > 0) sha.update(chunk.data(), n);
  check(!std::ferror(f.get()), "{}: read error while hashing", path);
  return sha.hex();
}

std::string checkpoint_content_hash(const std::string& dir, FileHashCache* hashes) {
  if (ckpt::is_checkpoint_dir(dir)) {
    const fs::path manifest = fs::path(dir) / "MANIFEST.json";
    check(fs::exists(manifest), "{}: a checkpoint without MANIFEST.json (incomplete)", dir);
    const std::string text = read_text_file(manifest.string());
    return sha256_hex(text.data(), text.size());
  }
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && (name == "config.json" || name.ends_with(".safetensors") ||
                                name == "model.safetensors.index.json"))
      names.push_back(name);
  }
  check(std::find(names.begin(), names.end(), "config.json") != names.end(), "{}: no config.json to hash", dir);
  std::sort(names.begin(), names.end());
  std::string listing;  // "<name> <sha256>\n" per file, in name order
  for (const std::string& name : names) {
    const std::string file = (fs::path(dir) / name).string();
    listing += name + " " + (hashes ? hashes->sha256(file) : file_sha256(file)) + "\n";
  }
  return sha256_hex(listing.data(), listing.size());
}

}  // namespace replica::reproduce
