// NumPy .npy files (format 1.0-3.0, little-endian, C order): read into memory, write atomically.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace replica {

enum class NpyType { f32, f64, i32, i64, u16, u32, u8 };

size_t npy_type_size(NpyType type);
const char* npy_type_descr(NpyType type);  // "<f4", ...

struct NpyHeader {
  NpyType type;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes from the start of the file to the first element
  size_t count() const;
};

// Parses the header of a .npy file already in memory; `path` only names the file in errors.
NpyHeader parse_npy_header(const void* bytes, size_t size, const std::string& path);
// The same for a file of `file_size` bytes of which `bytes` holds the first `size` (at least the whole header): a
// remote file, whose data is not read to parse its header.
NpyHeader parse_npy_header(const void* bytes, size_t size, const std::string& path, uint64_t file_size);
bool has_npy_magic(const void* bytes, size_t size);

struct NpyArray {
  NpyHeader header;
  std::vector<char> data;  // raw little-endian elements
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(data.data()); }
};

NpyArray read_npy(const std::string& path);

// Reads integer token ids (int32, int64, uint16 or uint32) of any shape as int64.
std::vector<int64_t> read_npy_ids(const std::string& path, std::vector<int64_t>* shape);

// A format 1.0 header, padded to a multiple of 64 bytes and to at least min_size (so that a header rewritten with the
// final shape keeps the size of the one written first).
std::string npy_header(NpyType type, const std::vector<int64_t>& shape, size_t min_size = 0);

// Writes to path + ".tmp" and renames, so a reader never sees half a file.
void write_npy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data);

}  // namespace replica
