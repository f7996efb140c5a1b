// One OLMo-style token file: headerless little-endian uint16/uint32 ids (named *.npy by convention), or a real .npy
// array (1-D, <u2/<u4) read through its header. A local file is memory-mapped; an http(s):// one is read by range
// requests (data/byte_source.h), the same ids either way.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "replica/data/byte_source.h"

namespace replica::data {

enum class TokenDtype { u16, u32 };

TokenDtype parse_token_dtype(std::string_view name);  // "uint16" | "uint32"
const char* token_dtype_name(TokenDtype dtype);
inline size_t token_dtype_size(TokenDtype dtype) { return dtype == TokenDtype::u16 ? 2 : 4; }

class TokenFile {
 public:
  // `headerless_dtype` applies when the file has no .npy magic. Raises Error for a missing, empty,
  // truncated (size not a multiple of the element size) or malformed file.
  TokenFile(const std::string& path, TokenDtype headerless_dtype);

  const std::string& path() const { return source_->path(); }
  TokenDtype dtype() const { return dtype_; }
  bool has_npy_header() const { return header_size_ > 0; }
  uint64_t num_tokens() const { return num_tokens_; }
  uint64_t file_size() const { return source_->size(); }

  // Token i. A remote file is read a window of 1 MiB at a time, so that a scan costs one request per window.
  uint32_t at(uint64_t i) const;
  // Copies ids [start, start + count) into `out`; raises Error naming the file and position for an id
  // >= vocab_size (a corrupt file or the wrong dtype).
  void read(uint64_t start, uint64_t count, int32_t* out, uint32_t vocab_size) const;

  // The positions of every token equal to `id`, ascending (the document ends of a file, for id = EOS).
  std::vector<uint64_t> positions_of(uint32_t id) const;

  // Non-empty when a headerless uint16 file reads like uint32 ids (every second uint16 of a sample is 0 or 1: the
  // high halves of little-endian uint32 ids below 131,072, which hold the dolma2 vocabulary and its EOS 100257): a
  // wrong dtype that no id check catches. A sentence for a warning, naming the file and the fix.
  std::string dtype_hint() const;

  // XXH3-64 of the token bytes: all of them up to 64 MiB, else 64 evenly spaced 1 MiB blocks plus the
  // last one (so a 100 GB file is fingerprinted in milliseconds, yet any rewrite or truncation shows). Computed once;
  // a remote file's is remembered in the run's remote index.
  uint64_t content_hash() const;

 private:
  // The bytes of tokens [start, start + count): a view of the map, or read into `scratch`.
  const char* token_bytes(uint64_t start, uint64_t count, std::vector<char>& scratch) const;

  std::shared_ptr<const ByteSource> source_;
  TokenDtype dtype_;
  size_t header_size_ = 0;
  uint64_t num_tokens_ = 0;
  const char* tokens_ = nullptr;  // the mapped tokens; null for a remote file
  // The last window at() read of a remote file, and the hash once computed (behind a pointer: TokenFile moves).
  struct Memo {
    std::mutex mutex;
    uint64_t window_start = 0;
    std::vector<char> window;
    std::optional<uint64_t> content_hash;
  };
  std::unique_ptr<Memo> memo_ = std::make_unique<Memo>();
};

}  // namespace replica::data
