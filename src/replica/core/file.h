// Whole-file reads and atomic writes (temp name, fsync, rename), so outputs are never half-written.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace replica {

std::vector<char> read_file(const std::string& path);
std::string read_text_file(const std::string& path);

// Writes go to `path + ".tmp"`; commit() flushes, fsyncs and renames onto `path`. Destroying an
// uncommitted AtomicFile removes the temp file, so a failure leaves nothing behind.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, size_t size);
  // Replaces bytes already written (a header whose sizes are known only at the end); later writes append.
  void overwrite(size_t offset, const void* data, size_t size);
  void commit();

 private:
  std::string path_, temp_path_;
  std::FILE* file_ = nullptr;
};

void write_text_file_atomic(const std::string& path, const std::string& text);

// For files appended to as a run goes (metrics.jsonl, TensorBoard events): a failed write or flush (a full disk)
// raises replica::Error naming `path` and the reason, so no line is lost silently.
void write_all(std::FILE* file, const void* data, size_t size, const std::string& path);
void flush_all(std::FILE* file, const std::string& path);

// Flushes stdout; a failed write (a full disk, a closed pipe) raises replica::Error, so a command whose output was
// lost does not exit 0.
void flush_stdout();

// fsync a directory so that a rename inside it is durable.
void fsync_directory(const std::string& dir);

}  // namespace replica
