// A gzip file written as a stream and published atomically (AtomicFile): one member, deflate level 9 as Python's gzip
// module writes by default, mtime 0 in the header so that equal input gives equal bytes.
#pragma once
#include <string>
#include <string_view>
#include <zlib.h>

#include "replica/core/file.h"

namespace replica {

class GzipWriter {
 public:
  explicit GzipWriter(std::string path);
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;

  void write(std::string_view bytes);
  // Ends the gzip stream and renames the file into place; without it, nothing is published.
  void commit();

 private:
  void deflate_into_file(std::string_view bytes, int flush);

  std::string path_;
  AtomicFile file_;
  z_stream stream_{};
};

}  // namespace replica
