// Where a data file's bytes come from: a local file, memory-mapped, or a remote http(s):// one read by range
// requests (data/remote_files.h). Token files, Dolma metadata sidecars and mix files are read only through this, so
// a URL works wherever a data path does.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace replica::data {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual const std::string& path() const = 0;  // the path or URL, for messages
  virtual uint64_t size() const = 0;
  // Every byte, when the file is memory-mapped; null when bytes must be read().
  virtual const char* mapped() const { return nullptr; }
  // Bytes [offset, offset + out.size()), all of them, or an Error naming the path.
  virtual void read(uint64_t offset, std::span<char> out) const = 0;
  // A content hash computed by an earlier start (a remote file's, kept with its size in the run's remote index),
  // so that a restart does not read the file again to fingerprint it.
  virtual std::optional<uint64_t> remembered_hash() const { return std::nullopt; }
  virtual void remember_hash(uint64_t /*hash*/) const {}
};

// A URL (data/http_client.h, is_url) opens through the process's remote files, anything else as a local file.
// Raises Error naming the path for a missing file.
std::shared_ptr<const ByteSource> open_byte_source(const std::string& path);

// A whole small file (a mix file, a metadata sidecar), local or remote.
std::vector<char> read_whole(const std::string& path);

}  // namespace replica::data
