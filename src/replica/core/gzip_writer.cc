#include "replica/core/gzip_writer.h"

#include <algorithm>

#include "replica/core/error.h"

namespace replica {

GzipWriter::GzipWriter(std::string path) : path_(path), file_(std::move(path)) {
  check(deflateInit2(&stream_, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK,
        "{}: zlib cannot start deflating", path_);
}

GzipWriter::~GzipWriter() { deflateEnd(&stream_); }

void GzipWriter::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t feed = std::min<size_t>(bytes.size(), size_t(1) << 30);  // zlib counts input in 32-bit units
    deflate_into_file(bytes.substr(0, feed), Z_NO_FLUSH);
    bytes.remove_prefix(feed);
  }
}

void GzipWriter::commit() {
  deflate_into_file({}, Z_FINISH);
  file_.commit();
}

void GzipWriter::deflate_into_file(std::string_view bytes, int flush) {
  char chunk[1 << 16];
  stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream_.avail_in = uInt(bytes.size());
  int status;
  do {
    stream_.next_out = reinterpret_cast<Bytef*>(chunk);
    stream_.avail_out = sizeof(chunk);
    status = deflate(&stream_, flush);
    check(status != Z_STREAM_ERROR, "{}: zlib failed while deflating", path_);
    file_.write(chunk, sizeof(chunk) - stream_.avail_out);
  } while (stream_.avail_out == 0);
  check(flush != Z_FINISH || status == Z_STREAM_END, "{}: zlib could not finish the gzip stream", path_);
}

}  // namespace replica
