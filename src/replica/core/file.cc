// File helpers: whole reads, atomic writes.
#include "replica/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "replica/core/error.h"

namespace replica {

std::vector<char> read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  check(f != nullptr, "{}: cannot open ({})", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f);
    fail("{}: {} (expected a file)", path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
  }
  std::vector<char> bytes(size_t(st.st_size));
  size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  check(got == bytes.size(), "{}: short read ({} of {} bytes)", path, got, bytes.size());
  return bytes;
}

std::string read_text_file(const std::string& path) {
  std::vector<char> bytes = read_file(path);
  return std::string(bytes.begin(), bytes.end());
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temp_path_(path_ + ".tmp") {
  file_ = std::fopen(temp_path_.c_str(), "wb");
  check(file_ != nullptr, "{}: cannot create ({})", temp_path_, std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (file_) {
    std::fclose(file_);
    std::remove(temp_path_.c_str());
  }
}

// The errno of a failed call, read before anything else can change it (a check's message arguments are
// evaluated in an unspecified order relative to the call).
static std::string error_text(bool ok) { return ok ? std::string() : std::strerror(errno); }

void AtomicFile::write(const void* data, size_t size) { write_all(file_, data, size, temp_path_); }

void AtomicFile::overwrite(size_t offset, const void* data, size_t size) {
  const bool ok = std::fseek(file_, long(offset), SEEK_SET) == 0;
  const std::string why = error_text(ok);
  check(ok, "{}: seek failed ({})", temp_path_, why);
  write(data, size);
  check(std::fseek(file_, 0, SEEK_END) == 0, "{}: seek failed", temp_path_);
}

void AtomicFile::commit() {
  bool ok = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  std::string why = error_text(ok);
  check(ok, "{}: flush failed ({})", temp_path_, why);
  std::fclose(file_);
  file_ = nullptr;
  ok = std::rename(temp_path_.c_str(), path_.c_str()) == 0;
  why = error_text(ok);
  if (!ok) std::remove(temp_path_.c_str());  // closed above, so the destructor would leave it (review case 44)
  check(ok, "{}: rename failed ({})", path_, why);
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  fsync_directory(parent.empty() ? "." : parent.string());
}

void write_all(std::FILE* file, const void* data, size_t size, const std::string& path) {
  const bool ok = size == 0 || std::fwrite(data, 1, size, file) == size;
  const std::string why = error_text(ok);
  check(ok, "{}: write failed ({})", path, why);
}

void flush_all(std::FILE* file, const std::string& path) {
  const bool ok = std::fflush(file) == 0;
  const std::string why = error_text(ok);
  check(ok, "{}: write failed ({})", path, why);
}

void flush_stdout() {
  const bool ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  const std::string why = ok ? std::string() : errno ? std::strerror(errno) : "an earlier write failed";
  check(ok, "stdout: write failed ({})", why);
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

void fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace replica
