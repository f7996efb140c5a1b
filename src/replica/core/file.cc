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

void AtomicFile::write(const void* data, size_t size) {
  if (size == 0) return;
  check(std::fwrite(data, 1, size, file_) == size, "{}: write failed ({})", temp_path_, std::strerror(errno));
}

void AtomicFile::commit() {
  check(std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0, "{}: flush failed ({})", temp_path_,
        std::strerror(errno));
  std::fclose(file_);
  file_ = nullptr;
  check(std::rename(temp_path_.c_str(), path_.c_str()) == 0, "{}: rename failed ({})", path_, std::strerror(errno));
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  fsync_directory(parent.empty() ? "." : parent.string());
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
