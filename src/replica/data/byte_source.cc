// Local byte sources (a memory map) and the dispatch between local paths and URLs.
#include "replica/data/byte_source.h"

#include <algorithm>
#include <cstring>

#include "replica/core/error.h"
#include "replica/core/mapped_file.h"
#include "replica/data/http_client.h"
#include "replica/data/remote_files.h"

namespace replica::data {
namespace {

class LocalFile : public ByteSource {
 public:
  explicit LocalFile(const std::string& path) : file_(path) {}
  const std::string& path() const override { return file_.path(); }
  uint64_t size() const override { return file_.size(); }
  const char* mapped() const override { return file_.data(); }
  void read(uint64_t offset, std::span<char> out) const override {
    check(offset <= file_.size() && out.size() <= file_.size() - offset,
          "{}: read of {} bytes at {} is past the end of the file ({} bytes)", path(), out.size(), offset,
          file_.size());
    if (!out.empty()) std::memcpy(out.data(), file_.data() + offset, out.size());
  }

 private:
  MappedFile file_;
};

}  // namespace

std::shared_ptr<const ByteSource> open_byte_source(const std::string& path) {
  if (is_url(path)) return open_remote_file(path);
  check(path.find("://") == std::string::npos,
        "{}: only http:// and https:// URLs are read directly (an s3:// or gs:// path: use its https:// form, e.g. "
        "https://olmo-data.org/ for AI2's data, or a local copy)",
        path);
  return std::make_shared<const LocalFile>(path);
}

std::vector<char> read_whole(const std::string& path) {
  const std::shared_ptr<const ByteSource> source = open_byte_source(path);
  std::vector<char> bytes(source->size());
  source->read(0, bytes);
  return bytes;
}

}  // namespace replica::data
