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

TokenFile::TokenFile(const std::string& path, TokenDtype headerless_dtype)
    : source_(open_byte_source(path)), dtype_(headerless_dtype) {
  const uint64_t size = source_->size();
  check(size > 0, "{}: empty token file (expected {} token ids)", path, token_dtype_name(dtype_));
  // The header, when there is one, is within the first 64 KiB (.npy 1.0 headers are at most 65,545 bytes; larger
  // 2.0 ones are refused as truncated).
  std::vector<char> head_bytes;
  const char* head = source_->mapped();
  size_t head_size = size_t(size);
  if (!head) {
    head_bytes.resize(size_t(std::min<uint64_t>(size, 65546)));
    source_->read(0, head_bytes);
    head = head_bytes.data(), head_size = head_bytes.size();
  }
  if (has_npy_magic(head, head_size)) {
    NpyHeader header = parse_npy_header(head, head_size, path, size);
    check(header.type == NpyType::u16 || header.type == NpyType::u32,
          "{}: .npy dtype {} is not a token dtype (expected <u2 or <u4)", path, npy_type_descr(header.type));
    check(header.shape.size() == 1, "{}: token .npy must be 1-D, has {} dimensions", path, header.shape.size());
    dtype_ = header.type == NpyType::u16 ? TokenDtype::u16 : TokenDtype::u32;
    header_size_ = header.data_offset;
    num_tokens_ = header.count();  // parse_npy_header checked that they fit in the file
    const uint64_t data_bytes = size - header_size_, item = token_dtype_size(dtype_);
    check(data_bytes % item == 0 && num_tokens_ == data_bytes / item,
          "{}: truncated or corrupt .npy: header says {} tokens, file has {} bytes after the header ({} tokens)", path,
          num_tokens_, data_bytes, data_bytes / item);
    check(num_tokens_ > 0, "{}: empty token file (0 tokens)", path);
  } else {
    size_t item = token_dtype_size(dtype_);
    check(size % item == 0, "{}: truncated or corrupt token file: {} bytes is not a multiple of {} ({} ids)", path,
          size, item, token_dtype_name(dtype_));
    num_tokens_ = size / item;
  }
  if (source_->mapped()) tokens_ = source_->mapped() + header_size_;
}

const char* TokenFile::token_bytes(uint64_t start, uint64_t count, std::vector<char>& scratch) const {
  const uint64_t item = token_dtype_size(dtype_);
  if (tokens_) return tokens_ + start * item;
  scratch.resize(size_t(count * item));
  source_->read(header_size_ + start * item, scratch);
  return scratch.data();
}

uint32_t TokenFile::at(uint64_t i) const {
  check(i < num_tokens_, "{}: token {} is past the end ({} tokens)", path(), i, num_tokens_);
  const size_t item = token_dtype_size(dtype_);
  auto decode = [&](const char* p) -> uint32_t {
    if (dtype_ == TokenDtype::u16) {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  if (tokens_) return decode(tokens_ + item * i);
  constexpr uint64_t kWindowTokens = (uint64_t(1) << 20) / 4;
  std::lock_guard<std::mutex> lock(memo_->mutex);
  const uint64_t first = i / kWindowTokens * kWindowTokens;
  if (memo_->window.empty() || memo_->window_start != first) {
    memo_->window.clear();  // a failed read leaves no stale window
    std::vector<char> bytes;
    token_bytes(first, std::min(kWindowTokens, num_tokens_ - first), bytes);
    memo_->window = std::move(bytes);
    memo_->window_start = first;
  }
  return decode(memo_->window.data() + item * (i - first));
}

void TokenFile::read(uint64_t start, uint64_t count, int32_t* out, uint32_t vocab_size) const {
  check(start <= num_tokens_ && count <= num_tokens_ - start,
        "{}: read of {} tokens from token {} past the end ({} tokens)", path(), count, start, num_tokens_);
  std::vector<char> scratch;
  const char* bytes = token_bytes(start, count, scratch);
  uint32_t max_id = 0;
  if (dtype_ == TokenDtype::u16) {
    for (uint64_t i = 0; i < count; i++) {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * i, 2);
      out[i] = int32_t(v);
      max_id = std::max<uint32_t>(max_id, v);
    }
  } else {
    for (uint64_t i = 0; i < count; i++) {
      uint32_t v;
      std::memcpy(&v, bytes + 4 * i, 4);
      out[i] = int32_t(v);
      max_id = std::max(max_id, v);
    }
  }
  if (max_id >= vocab_size)
    for (uint64_t i = 0; i < count; i++)
      check(uint32_t(out[i]) < vocab_size, "{}: token {} has id {} >= vocab size {} (corrupt file or wrong dtype?)",
            path(), start + i, uint32_t(out[i]), vocab_size);
}

std::vector<uint64_t> TokenFile::positions_of(uint32_t id) const {
  std::vector<uint64_t> positions;
  // In chunks of 16 Mi tokens, so that a remote file is scanned with few requests and little memory.
  constexpr uint64_t kChunk = uint64_t(1) << 24;
  std::vector<char> scratch;
  auto scan = [&]<typename T>(T) {
    if (id > uint32_t(T(~T(0)))) return;  // an id wider than the dtype never occurs
    for (uint64_t first = 0; first < num_tokens_; first += kChunk) {
      const uint64_t count = std::min(kChunk, num_tokens_ - first);
      const char* bytes = token_bytes(first, count, scratch);
      for (uint64_t i = 0; i < count; i++) {
        T v;
        std::memcpy(&v, bytes + sizeof(T) * i, sizeof(T));
        if (v == T(id)) positions.push_back(first + i);
      }
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
  std::lock_guard<std::mutex> lock(memo_->mutex);
  if (memo_->content_hash) return *memo_->content_hash;
  if (std::optional<uint64_t> remembered = source_->remembered_hash()) return *(memo_->content_hash = remembered);
  const uint64_t item = token_dtype_size(dtype_), bytes = num_tokens_ * item;
  constexpr uint64_t kWhole = uint64_t(64) << 20, kBlock = uint64_t(1) << 20, kBlocks = 64;
  std::vector<char> scratch;
  uint64_t hash;
  if (bytes <= kWhole) {
    hash = XXH3_64bits(token_bytes(0, num_tokens_, scratch), bytes);
  } else {
    // Byte offsets, as they always were: a block may start inside a token.
    auto block = [&](uint64_t offset) -> const char* {
      if (tokens_) return tokens_ + offset;
      scratch.resize(kBlock);
      source_->read(header_size_ + offset, scratch);
      return scratch.data();
    };
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    for (uint64_t b = 0; b < kBlocks; b++) XXH3_64bits_update(state, block((bytes - kBlock) / kBlocks * b), kBlock);
    XXH3_64bits_update(state, block(bytes - kBlock), kBlock);
    hash = XXH3_64bits_digest(state);
    XXH3_freeState(state);
  }
  source_->remember_hash(hash);
  memo_->content_hash = hash;
  return hash;
}

}  // namespace replica::data
