// Read-only memory map of a whole file: large token files and checkpoints are paged in on demand,
// never read into RAM at once.
#pragma once
#include <cstddef>
#include <string>

namespace replica {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile& operator=(MappedFile&&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Unmaps the pages of bytes [begin, end) from this process (they stay in the page cache, and reading them again
  // maps them again), so that reading a large file through the map once does not leave it all counted as resident.
  void drop_pages(size_t begin, size_t end) const;

 private:
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace replica
