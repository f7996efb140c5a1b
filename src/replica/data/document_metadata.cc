// Dolma metadata sidecars: the sidecar name rule, gzip inflation with zlib, and the checked `start,end` parser.
#include "replica/data/document_metadata.h"

#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>

#include "replica/core/error.h"
#include "replica/core/parse_number.h"
#include "replica/core/pystr.h"
#include "replica/data/byte_source.h"
#include "replica/data/http_client.h"

namespace replica::data {
namespace {

// A line as an error shows it: at most 60 characters.
std::string quoted(std::string_view line) {
  return fmt::format("'{}{}'", line.substr(0, 60), line.size() > 60 ? "..." : "");
}

}  // namespace

std::string document_metadata_path(const std::string& token_path) {
  const std::filesystem::path path(token_path);
  const std::string name = path.filename().string();
  check(name.find(".npy") != std::string::npos,
        "{}: its document metadata is named by replacing '.npy' in the file name with '.csv.gz' (OLMo-core's rule), "
        "but the name has no '.npy'; rename the token file or use data.document_boundaries: eos",
        token_path);
  return (path.parent_path() / py::replace(name, ".npy", ".csv.gz")).string();
}

std::string gunzip(std::span<const char> bytes, const std::string& name) {
  check(bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1f && uint8_t(bytes[1]) == 0x8b,
        "{}: not a gzip file (expected the bytes 1f 8b at its start)", name);
  z_stream z{};
  check(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK, "{}: zlib cannot start inflating", name);
  std::string out;
  char chunk[1 << 16];
  size_t at = 0;
  int status = Z_OK;
  while (at < bytes.size()) {
    // zlib counts input in 32-bit units: feed at most 1 GiB at a time.
    const size_t feed = std::min<size_t>(bytes.size() - at, size_t(1) << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + at));
    z.avail_in = uInt(feed);
    do {
      z.next_out = reinterpret_cast<Bytef*>(chunk);
      z.avail_out = sizeof(chunk);
      status = inflate(&z, Z_NO_FLUSH);
      out.append(chunk, sizeof(chunk) - z.avail_out);
    } while (status == Z_OK && (z.avail_out == 0 || z.avail_in > 0));
    at += feed - z.avail_in;
    if (status == Z_STREAM_END) {
      // Python's gzip reads member after member; zero bytes after a member are padding.
      while (at < bytes.size() && bytes[at] == 0) at++;
      if (at == bytes.size()) break;
      if (bytes.size() - at < 2 || uint8_t(bytes[at]) != 0x1f || uint8_t(bytes[at + 1]) != 0x8b) {
        inflateEnd(&z);
        fail("{}: bytes after the gzip data at offset {} are not another gzip member", name, at);
      }
      inflateReset(&z);
      status = Z_OK;
    } else if (status != Z_OK && status != Z_BUF_ERROR) {
      const std::string why = z.msg ? z.msg : "corrupt data";
      inflateEnd(&z);
      fail("{}: corrupt gzip data near offset {} ({})", name, at, why);
    }
  }
  inflateEnd(&z);
  check(status == Z_STREAM_END, "{}: the gzip data is truncated (it ends inside a member)", name);
  return out;
}

// Python's csv.writer field (the excel dialect, QUOTE_MINIMAL): quoted when it holds the delimiter, the quote
// character or a character of the line terminator "\r\n", with quotes doubled.
void append_csv_field(std::string& row, std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    row += field;
    return;
  }
  row += '"';
  for (char c : field) {
    if (c == '"') row += '"';
    row += c;
  }
  row += '"';
}

std::string document_metadata_row(uint64_t start, uint64_t end, std::string_view id, std::string_view source,
                                  uint64_t line) {
  std::string row = fmt::format("{},{},", start, end);
  append_csv_field(row, id);
  row += ',';
  append_csv_field(row, source);
  row += fmt::format(",{}\r\n", line);
  return row;
}

std::vector<DocumentSpan> parse_document_metadata(std::string_view text, uint64_t total_tokens,
                                                  const std::string& name) {
  std::vector<DocumentSpan> documents;
  uint64_t previous_end = 0;
  size_t line_number = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t stop = std::min(text.find_first_of("\r\n", at), text.size());
    const std::string_view line = text.substr(at, stop - at);
    at = stop + (text.substr(stop, 2) == "\r\n" ? 2 : 1);
    line_number++;
    const size_t comma = line.find(',');
    check(comma != std::string_view::npos, "{} line {}: expected 'start,end' (Dolma's document metadata), got {}", name,
          line_number, quoted(line));
    const std::string_view start_text = line.substr(0, comma);
    const std::string_view end_text = line.substr(comma + 1, line.find(',', comma + 1) - (comma + 1));
    const std::optional<uint64_t> start = parse_uint64(start_text), end = parse_uint64(end_text);
    check(start && end, "{} line {}: expected two unsigned integers 'start,end', got {}", name, line_number,
          quoted(line));
    check(*start < total_tokens, "{} line {}: document start {} is out of bounds of a token file of {} tokens", name,
          line_number, *start, total_tokens);
    check(*end <= total_tokens, "{} line {}: document end {} is out of bounds of a token file of {} tokens", name,
          line_number, *end, total_tokens);
    check(*start < *end, "{} line {}: document [{}, {}) is empty or reversed (start must be below end)", name,
          line_number, *start, *end);
    check(*start >= previous_end,
          "{} line {}: document [{}, {}) starts before the previous document's end {} (documents must be in file "
          "order and must not overlap)",
          name, line_number, *start, *end, previous_end);
    documents.push_back({*start, *end});
    previous_end = *end;
  }
  return documents;
}

DocumentMetadata::DocumentMetadata(const std::string& token_path) : path_(document_metadata_path(token_path)) {
  check(is_url(path_) || std::filesystem::exists(path_),
        "{}: missing; data.document_boundaries: metadata takes the documents of {} from this Dolma metadata file "
        "(one 'start,end' line per document); use data.document_boundaries: eos to split the file at EOS tokens",
        path_, token_path);
  bytes_ = read_whole(path_);
  hash_ = XXH3_64bits(bytes_.data(), bytes_.size());
}

std::vector<DocumentSpan> DocumentMetadata::documents(uint64_t total_tokens) const {
  return parse_document_metadata(gunzip(bytes_, path_), total_tokens, path_);
}

}  // namespace replica::data
