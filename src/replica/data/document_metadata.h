// Dolma's document metadata: the `.csv.gz` sidecar of a token file, one `start,end[,...]` line per document, which
// OLMo-core's iter_document_indices reads instead of scanning for EOS when the token file is not local.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "replica/data/obfd.h"

namespace replica::data {

// The sidecar's path: the token file's directory and its base name with every ".npy" replaced by ".csv.gz"
// (OLMo-core: os.path.basename(path).replace(".npy", ".csv.gz")). Raises Error for a base name without ".npy",
// which OLMo-core would map to the token file itself.
std::string document_metadata_path(const std::string& token_path);

// The bytes of a gzip file (one member or several, as Python's gzip module reads them), inflated. Raises Error
// naming `name` when they are not gzip, are corrupt (a bad checksum) or end inside a member.
std::string gunzip(std::span<const char> bytes, const std::string& name);

// One line of the sidecar as AI2's `dolma tokens` writes it (MemmapWriter: csv.writer over MemmapMetadata): the
// document's token range [start, end), its JSON "id", the source file as given, and its 1-based line there, with
// Python's csv quoting (QUOTE_MINIMAL) and "\r\n" line ends.
std::string document_metadata_row(uint64_t start, uint64_t end, std::string_view id, std::string_view source,
                                  uint64_t line);

// The documents of the metadata text `text` (already inflated) of a token file of `total_tokens` tokens: each
// line's first two comma-separated fields, [start, end), in file order; further fields are ignored. Lines end with
// "\n", "\r\n" or "\r" (Python's universal newlines). Raises Error naming `name` and the line for a line that is not
// `start,end[,...]`, a field that is not an unsigned decimal integer of 64 bits, start >= total_tokens or
// end > total_tokens (OLMo-core's checks), and, stricter than OLMo-core, start >= end (an empty or reversed
// document) and a start before the previous document's end (documents out of order or overlapping).
std::vector<DocumentSpan> parse_document_metadata(std::string_view text, uint64_t total_tokens,
                                                  const std::string& name);

// The sidecar of one token file, read whole: its content hash for fingerprints and cache keys, and its documents
// parsed on demand (a packing served from the cache never needs them).
class DocumentMetadata {
 public:
  // Raises Error naming the sidecar and the token file when it is missing or unreadable.
  explicit DocumentMetadata(const std::string& token_path);

  const std::string& path() const { return path_; }
  uint64_t content_hash() const { return hash_; }  // XXH3-64 of the file's bytes (compressed)
  // parse_document_metadata of the inflated sidecar, for a token file of `total_tokens` tokens.
  std::vector<DocumentSpan> documents(uint64_t total_tokens) const;

 private:
  std::string path_;
  std::vector<char> bytes_;
  uint64_t hash_ = 0;
};

}  // namespace replica::data
