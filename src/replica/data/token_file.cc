// Token files: dtype and header detection, bounds-checked reads, sampled content hashes.
#include "replica/data/token_file.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "replica/core/error.h"
#include "replica/core/npy.h"

namespace replica::data {

TokenDtype parse_token_dtype(std::string_view name) {
  if (name == "uint16" || name == "u16") return TokenDtype::u16;
  if (name == "uint32" || name == "u32") return TokenDtype::u32;
  fail("token dtype '{}': expected uint16 or uint32", name);
}

const char* token_dtype_name(TokenDtype dtype) { return dtype == TokenDtype::u16 ? "uint16" : "uint32"; }

TokenFile::TokenFile(const std::string& path, TokenDtype headerless_dtype) : file_(path), dtype_(headerless_dtype) {
  check(file_.size() > 0, "{}: empty token file (expected {} token ids)", path, token_dtype_name(dtype_));
  if (has_npy_magic(file_.data(), file_.size())) {
    NpyHeader header = parse_npy_header(file_.data(), file_.size(), path);
    check(header.type == NpyType::u16 || header.type == NpyType::u32,
          "{}: .npy dtype {} is not a token dtype (expected <u2 or <u4)", path, npy_type_descr(header.type));
    check(header.shape.size() == 1, "{}: token .npy must be 1-D, has {} dimensions", path, header.shape.size());
    dtype_ = header.type == NpyType::u16 ? TokenDtype::u16 : TokenDtype::u32;
    header_size_ = header.data_offset;
    num_tokens_ = header.count();  // parse_npy_header checked that they fit in the file
    const size_t data_bytes = file_.size() - header_size_, item = token_dtype_size(dtype_);
    check(data_bytes % item == 0 && num_tokens_ == data_bytes / item,
          "{}: truncated or corrupt .npy: header says {} tokens, file has {} bytes after the header ({} tokens)", path,
          num_tokens_, data_bytes, data_bytes / item);
    check(num_tokens_ > 0, "{}: empty token file (0 tokens)", path);
  } else {
    size_t item = token_dtype_size(dtype_);
    check(file_.size() % item == 0,
          "{}: truncated or corrupt token file: {} bytes is not a multiple of {} ({} ids)", path, file_.size(), item,
          token_dtype_name(dtype_));
    num_tokens_ = file_.size() / item;
  }
  tokens_ = file_.data() + header_size_;
}

uint32_t TokenFile::at(uint64_t i) const {
  if (dtype_ == TokenDtype::u16) {
    uint16_t v;
    std::memcpy(&v, tokens_ + 2 * i, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, tokens_ + 4 * i, 4);
  return v;
}

void TokenFile::read(uint64_t start, uint64_t count, int32_t* out, uint32_t vocab_size) const {
  check(start <= num_tokens_ && count <= num_tokens_ - start,
        "{}: read of {} tokens from token {} past the end ({} tokens)", path(), count, start, num_tokens_);
  uint32_t max_id = 0;
  if (dtype_ == TokenDtype::u16) {
    for (uint64_t i = 0; i < count; i++) {
      uint16_t v;
      std::memcpy(&v, tokens_ + 2 * (start + i), 2);
      out[i] = int32_t(v);
      max_id = std::max<uint32_t>(max_id, v);
    }
  } else {
    for (uint64_t i = 0; i < count; i++) {
      uint32_t v;
      std::memcpy(&v, tokens_ + 4 * (start + i), 4);
      out[i] = int32_t(v);
      max_id = std::max(max_id, v);
    }
  }
  if (max_id >= vocab_size)
    for (uint64_t i = 0; i < count; i++)
      check(at(start + i) < vocab_size, "{}: token {} has id {} >= vocab size {} (corrupt file or wrong dtype?)",
            path(), start + i, at(start + i), vocab_size);
}

std::vector<uint64_t> TokenFile::positions_of(uint32_t id) const {
  std::vector<uint64_t> positions;
  auto scan = [&]<typename T>(T) {
    if (id > uint32_t(T(~T(0)))) return;  // an id wider than the dtype never occurs
    for (uint64_t i = 0; i < num_tokens_; i++) {
      T v;
      std::memcpy(&v, tokens_ + sizeof(T) * i, sizeof(T));
      if (v == T(id)) positions.push_back(i);
    }
  };
  if (dtype_ == TokenDtype::u16)
    scan(uint16_t{});
  else
    scan(uint32_t{});
  return positions;
}

std::string TokenFile::dtype_hint() const {
  if (dtype_ != TokenDtype::u16 || has_npy_header() || num_tokens_ % 2 != 0) return {};
  // Two windows of up to 4,096 id pairs, at the start and in the middle, are enough: real uint16 text has an id
  // above 1 at an odd position within a few tokens.
  const uint64_t pairs = num_tokens_ / 2, window = std::min<uint64_t>(pairs, 4096);
  bool low_above_one = false;
  for (uint64_t first : {uint64_t(0), (pairs - window) / 2})
    for (uint64_t p = first; p < first + window; p++) {
      if (at(2 * p + 1) > 1) return {};
      low_above_one |= at(2 * p) > 1;
    }
  if (!low_above_one) return {};
  return fmt::format("{}: every second uint16 id is 0 or 1, as when uint32 ids (below 131,072, as the dolma2 "
                     "vocabulary's) are read as uint16; if the file holds uint32 ids, set data.dtype=uint32 "
                     "(--dtype uint32)", path());
}

uint64_t TokenFile::content_hash() const {
  size_t bytes = num_tokens_ * token_dtype_size(dtype_);
  constexpr size_t kWhole = size_t(64) << 20, kBlock = size_t(1) << 20, kBlocks = 64;
  if (bytes <= kWhole) return XXH3_64bits(tokens_, bytes);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (size_t b = 0; b < kBlocks; b++) XXH3_64bits_update(state, tokens_ + (bytes - kBlock) / kBlocks * b, kBlock);
  XXH3_64bits_update(state, tokens_ + bytes - kBlock, kBlock);
  uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hash;
}

}  // namespace replica::data
