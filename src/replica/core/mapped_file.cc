// mmap-backed read-only file.
#include "replica/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "replica/core/error.h"

namespace replica {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  check(fd >= 0, "{}: cannot open ({})", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: {} (expected a file)", path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    check(p != MAP_FAILED, "{}: mmap failed ({})", path, std::strerror(errno));
    data_ = static_cast<const char*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

void MappedFile::drop_pages(size_t begin, size_t end) const {
  if (!data_ || begin >= end) return;
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const size_t first = begin / page * page, last = std::min(size_, (end + page - 1) / page * page);
  // Advice only: a mapping it cannot drop stays mapped, and the bytes read are the same either way.
  ::madvise(const_cast<char*>(data_) + first, last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace replica
