// The packing cache file: "RPLPACK1", the key (32 hex digits), the three table sizes, the tables as
// little-endian uint64 (document spans, instance offsets, documents by instance), then the XXH3-128 of all of that.
#include "replica/data/packing_cache.h"

#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::data {
namespace {

constexpr char kMagic[8] = {'R', 'P', 'L', 'P', 'A', 'C', 'K', '1'};
constexpr size_t kKeyChars = 32, kHeader = sizeof(kMagic) + kKeyChars + 3 * sizeof(uint64_t), kChecksum = 16;

void append_words(std::vector<char>& out, const uint64_t* words, size_t count) {
  const size_t at = out.size();
  out.resize(at + count * sizeof(uint64_t));
  if (count) std::memcpy(out.data() + at, words, count * sizeof(uint64_t));
}

// Reads uint64 words from the bytes in order (the size was checked before).
struct WordReader {
  const char* at;
  uint64_t next() {
    uint64_t w;
    std::memcpy(&w, at, sizeof(w));
    at += sizeof(w);
    return w;
  }
};

// Raises Error unless `p` is what pack_documents returns for documents within `group_tokens` tokens: spans of 1 to
// seq_len tokens in non-increasing length, non-empty bins of at most seq_len tokens, every document in one bin.
void check_packing(const PackedInstances& p, uint64_t group_tokens, uint64_t seq_len, const std::string& path) {
  for (size_t i = 0; i < p.documents.size(); i++) {
    const DocumentSpan& d = p.documents[i];
    check(d.start < d.end && d.end <= group_tokens && d.length() <= seq_len,
          "{}: document {} spans [{}, {}), outside 1 to {} tokens of a group of {}", path, i, d.start, d.end, seq_len,
          group_tokens);
    check(i == 0 || d.length() <= p.documents[i - 1].length(), "{}: documents are not sorted by length", path);
  }
  check(!p.instance_offsets.empty() && p.instance_offsets.front() == 0 &&
            p.instance_offsets.back() == p.documents_by_instance.size(),
        "{}: the instance offsets do not cover the {} packed documents", path, p.documents_by_instance.size());
  std::vector<bool> placed(p.documents.size(), false);
  for (size_t i = 0; i + 1 < p.instance_offsets.size(); i++) {
    check(p.instance_offsets[i] < p.instance_offsets[i + 1] &&
              p.instance_offsets[i + 1] <= p.documents_by_instance.size(),
          "{}: instance {} has offsets [{}, {})", path, i, p.instance_offsets[i], p.instance_offsets[i + 1]);
    uint64_t tokens = 0;
    for (uint64_t k = p.instance_offsets[i]; k < p.instance_offsets[i + 1]; k++) {
      const uint64_t id = p.documents_by_instance[k];
      check(id < p.documents.size() && !placed[id], "{}: document {} of instance {} is not a new document id", path, id,
            i);
      placed[id] = true;
      tokens += p.documents[id].length();
    }
    check(tokens <= seq_len, "{}: instance {} holds {} tokens, more than {}", path, i, tokens, seq_len);
  }
  check(p.documents_by_instance.size() == p.documents.size(), "{}: {} of {} documents are in an instance", path,
        p.documents_by_instance.size(), p.documents.size());
}

}  // namespace

std::string packing_cache_key(std::span<const TokenFile> files, uint64_t seq_len, uint32_t eos,
                              LongDocStrategy strategy, std::span<const uint64_t> metadata_hashes) {
  check(metadata_hashes.empty() || metadata_hashes.size() == files.size(),
        "packing cache key: {} metadata hashes for {} files", metadata_hashes.size(), files.size());
  std::string text =
      fmt::format("replica-packing-v1;seq_len={};eos={};long_doc={};", seq_len, eos, long_doc_strategy_name(strategy));
  if (!metadata_hashes.empty()) text += "boundaries=metadata;";
  for (size_t i = 0; i < files.size(); i++) {
    const TokenFile& f = files[i];
    text +=
        fmt::format("tokens={},dtype={},hash={:016x};", f.num_tokens(), token_dtype_name(f.dtype()), f.content_hash());
    if (!metadata_hashes.empty()) text += fmt::format("metadata={:016x};", metadata_hashes[i]);
  }
  const XXH128_hash_t hash = XXH3_128bits(text.data(), text.size());
  return fmt::format("{:016x}{:016x}", hash.high64, hash.low64);
}

std::string packing_cache_path(const std::string& work_dir, const std::string& key) {
  return (std::filesystem::path(work_dir) / ("packing-" + key + ".bin")).string();
}

std::optional<PackedInstances> read_packing_cache(const std::string& path, const std::string& key,
                                                  uint64_t group_tokens, uint64_t seq_len) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  const std::vector<char> bytes = read_file(path);
  check(bytes.size() >= kHeader + kChecksum && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0,
        "{}: not a packing cache file", path);
  check(std::string(bytes.data() + sizeof(kMagic), kKeyChars) == key, "{}: the key inside is not {}", path, key);
  WordReader words{bytes.data() + sizeof(kMagic) + kKeyChars};
  const uint64_t counts[3] = {words.next(), words.next(), words.next()};
  const uint64_t max_words = (bytes.size() - kHeader - kChecksum) / sizeof(uint64_t);
  check(counts[0] <= max_words / 2 && counts[1] <= max_words && counts[2] <= max_words &&
            kHeader + (2 * counts[0] + counts[1] + counts[2]) * sizeof(uint64_t) + kChecksum == bytes.size(),
        "{}: {} bytes do not match the table sizes in its header", path, bytes.size());
  const XXH128_hash_t sum = XXH3_128bits(bytes.data(), bytes.size() - kChecksum);
  uint64_t stored[2];
  std::memcpy(stored, bytes.data() + bytes.size() - kChecksum, kChecksum);
  check(stored[0] == sum.high64 && stored[1] == sum.low64, "{}: checksum mismatch", path);

  PackedInstances p;
  p.documents.resize(size_t(counts[0]));
  for (DocumentSpan& d : p.documents) d = {words.next(), words.next()};
  p.instance_offsets.resize(size_t(counts[1]));
  for (uint64_t& o : p.instance_offsets) o = words.next();
  p.documents_by_instance.resize(size_t(counts[2]));
  for (uint64_t& id : p.documents_by_instance) id = words.next();
  check_packing(p, group_tokens, seq_len, path);
  return p;
}

void write_packing_cache(const std::string& path, const std::string& key, const PackedInstances& packed,
                         uint64_t writer) {
  check(key.size() == kKeyChars, "packing cache key '{}' is not {} hex digits", key, kKeyChars);
  std::vector<char> bytes(kMagic, kMagic + sizeof(kMagic));
  bytes.insert(bytes.end(), key.begin(), key.end());
  const uint64_t counts[3] = {packed.documents.size(), packed.instance_offsets.size(),
                              packed.documents_by_instance.size()};
  append_words(bytes, counts, 3);
  static_assert(sizeof(DocumentSpan) == 2 * sizeof(uint64_t));
  append_words(bytes, reinterpret_cast<const uint64_t*>(packed.documents.data()), 2 * packed.documents.size());
  append_words(bytes, packed.instance_offsets.data(), packed.instance_offsets.size());
  append_words(bytes, packed.documents_by_instance.data(), packed.documents_by_instance.size());
  const XXH128_hash_t sum = XXH3_128bits(bytes.data(), bytes.size());
  const uint64_t checksum[2] = {sum.high64, sum.low64};
  append_words(bytes, checksum, 2);

  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  const std::string unique = fmt::format("{}.{}-{}", path, ::getpid(), writer);
  AtomicFile file(unique);
  file.write(bytes.data(), bytes.size());
  file.commit();
  std::error_code error;
  std::filesystem::rename(unique, path, error);
  check(!error, "{}: rename failed ({})", path, error.message());
}

}  // namespace replica::data
