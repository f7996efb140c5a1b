// NumPy .npy reader and writer.
#include "replica/core/npy.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string_view>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/parse_number.h"

namespace replica {

size_t npy_type_size(NpyType type) {
  switch (type) {
    case NpyType::f32: case NpyType::i32: case NpyType::u32: return 4;
    case NpyType::f64: case NpyType::i64: return 8;
    case NpyType::u16: return 2;
    case NpyType::u8: return 1;
  }
  return 0;
}

const char* npy_type_descr(NpyType type) {
  switch (type) {
    case NpyType::f32: return "<f4";
    case NpyType::f64: return "<f8";
    case NpyType::i32: return "<i4";
    case NpyType::i64: return "<i8";
    case NpyType::u16: return "<u2";
    case NpyType::u32: return "<u4";
    case NpyType::u8: return "|u1";
  }
  return "";
}

size_t NpyHeader::count() const {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

bool has_npy_magic(const void* bytes, size_t size) {
  return size >= 6 && std::memcmp(bytes, "\x93NUMPY", 6) == 0;
}

// Returns the text of `key`'s value in a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }: a quoted string with its quotes, a tuple with its
// parentheses, or a bare word.
static std::string dict_value(const std::string& dict, const std::string& key, const std::string& path) {
  size_t at = dict.find("'" + key + "'");
  check(at != std::string::npos, "{}: .npy header has no '{}' (header: {})", path, key, dict);
  at = dict.find(':', at + key.size() + 2);
  const size_t start = at == std::string::npos ? at : dict.find_first_not_of(' ', at + 1);
  check(start != std::string::npos, "{}: .npy header has no value for '{}' (header: {})", path, key, dict);
  // One past the value: its closing bracket or quote, or the separator after a bare word (not included).
  const size_t end = dict[start] == '(' ? dict.find(')', start) + 1
                     : dict[start] == '\'' ? dict.find('\'', start + 1) + 1
                                           : dict.find_first_of(",}", start);
  check(end != 0 && end != std::string::npos, "{}: .npy header value of '{}' is not terminated (header: {})", path,
        key, dict);
  return dict.substr(start, end - start);
}

// The dimensions of a shape tuple "(3,)", "(2, 3)" or "()": each a non-negative decimal integer.
static std::vector<int64_t> parse_shape(const std::string& tuple, const std::string& path) {
  check(tuple.size() >= 2 && tuple.front() == '(' && tuple.back() == ')',
        "{}: .npy shape must be a tuple of integers, got {}", path, tuple);
  std::vector<int64_t> shape;
  const std::string inside = tuple.substr(1, tuple.size() - 2);
  for (size_t i = 0; i <= inside.size();) {
    size_t j = std::min(inside.find(',', i), inside.size());
    const size_t first = inside.find_first_not_of(' ', i), last = inside.find_last_not_of(' ', j - 1);
    const bool blank = first == std::string::npos || first >= j;
    // Only the item after a trailing comma may be blank: "(3,)" but not "(,)" or "(3,,)".
    check(!blank || (j == inside.size() && (i == 0 || !shape.empty())), "{}: .npy shape {} has an empty dimension",
          path, tuple);
    if (!blank) {
      const std::optional<int64_t> d = parse_int64(std::string_view(inside).substr(first, last + 1 - first));
      check(d.has_value() && *d >= 0, "{}: .npy shape {}: dimension '{}' is not a non-negative integer", path, tuple,
            inside.substr(first, last + 1 - first));
      shape.push_back(*d);
    }
    i = j + 1;
  }
  return shape;
}

NpyHeader parse_npy_header(const void* bytes, size_t size, const std::string& path) {
  return parse_npy_header(bytes, size, path, size);
}

NpyHeader parse_npy_header(const void* bytes, size_t size, const std::string& path, uint64_t file_size) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  check(has_npy_magic(bytes, size), "{}: not a .npy file (missing \\x93NUMPY magic)", path);
  check(size >= 10, "{}: truncated .npy file ({} bytes; the header alone needs at least 10)", path, size);
  const int major = p[6];
  check(major >= 1 && major <= 3, "{}: unsupported .npy format version {}.{} (expected 1.0, 2.0 or 3.0)", path, major,
        int(p[7]));
  size_t header_len, prefix;
  if (major == 1) {
    header_len = p[8] | (p[9] << 8);
    prefix = 10;
  } else {
    check(size >= 12, "{}: truncated .npy header ({} bytes)", path, size);
    header_len = p[8] | (p[9] << 8) | (size_t(p[10]) << 16) | (size_t(p[11]) << 24);
    prefix = 12;
  }
  check(header_len <= size - prefix, "{}: truncated .npy header ({} bytes declared, file has {})", path, header_len,
        size);
  std::string dict(reinterpret_cast<const char*>(p + prefix), header_len);

  NpyHeader header;
  std::string descr = dict_value(dict, "descr", path);
  check(descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'',
        "{}: .npy descr must be a quoted dtype string, got {}", path, descr);
  descr = descr.substr(1, descr.size() - 2);
  const NpyType types[] = {NpyType::f32, NpyType::f64, NpyType::i32, NpyType::i64,
                           NpyType::u16, NpyType::u32, NpyType::u8};
  bool known = false;
  for (NpyType t : types) {
    // The byte-order mark may be '<' or '=' (native, little-endian here); one-byte types also use '|'.
    std::string_view d = npy_type_descr(t);
    bool order_ok = !descr.empty() && (descr[0] == d[0] || descr[0] == '=' || (d[0] == '|' && descr[0] == '<'));
    if (order_ok && std::string_view(descr).substr(1) == d.substr(1)) {
      header.type = t;
      known = true;
    }
  }
  check(known, "{}: unsupported .npy dtype '{}' (expected little-endian f4, f8, i4, i8, u1, u2 or u4)", path, descr);
  check(dict_value(dict, "fortran_order", path) == "False", "{}: Fortran-order .npy arrays are not supported",
        path);
  const std::string shape_string = dict_value(dict, "shape", path);
  header.shape = parse_shape(shape_string, path);
  header.data_offset = prefix + header_len;
  // The data must fit in what follows the header. The element count is built with overflow checks and compared
  // as a count (count <= bytes / item), so that nothing wraps past 2^64.
  check(file_size >= size, "{}: {} header bytes of a file of {}", path, size, file_size);
  const size_t item = npy_type_size(header.type), available = (file_size - header.data_offset) / item;
  const bool empty = std::find(header.shape.begin(), header.shape.end(), 0) != header.shape.end();
  size_t count = 1;
  bool overflow = false;
  for (int64_t d : header.shape) overflow |= __builtin_mul_overflow(count, size_t(d), &count);
  check(empty || (!overflow && count <= available),
        "{}: truncated .npy data (shape {} of {}-byte items; the file has {} bytes after the header)", path,
        shape_string, item, file_size - header.data_offset);
  return header;
}

NpyArray read_npy(const std::string& path) {
  std::vector<char> bytes = read_file(path);
  NpyArray array;
  array.header = parse_npy_header(bytes.data(), bytes.size(), path);
  size_t n = array.header.count() * npy_type_size(array.header.type);
  array.data.assign(bytes.begin() + array.header.data_offset, bytes.begin() + array.header.data_offset + n);
  return array;
}

std::vector<int64_t> read_npy_ids(const std::string& path, std::vector<int64_t>* shape) {
  NpyArray array = read_npy(path);
  size_t n = array.header.count();
  std::vector<int64_t> ids(n);
  switch (array.header.type) {
    case NpyType::i32: for (size_t i = 0; i < n; i++) ids[i] = array.as<int32_t>()[i]; break;
    case NpyType::i64: for (size_t i = 0; i < n; i++) ids[i] = array.as<int64_t>()[i]; break;
    case NpyType::u16: for (size_t i = 0; i < n; i++) ids[i] = array.as<uint16_t>()[i]; break;
    case NpyType::u32: for (size_t i = 0; i < n; i++) ids[i] = array.as<uint32_t>()[i]; break;
    default: fail("{}: token ids must be int32, int64, uint16 or uint32, got {}", path,
                  npy_type_descr(array.header.type));
  }
  if (shape) *shape = array.header.shape;
  return ids;
}

std::string npy_header(NpyType type, const std::vector<int64_t>& shape, size_t min_size) {
  std::string shape_text = "(";
  for (int64_t d : shape) shape_text += std::to_string(d) + ", ";
  if (shape.size() > 1) shape_text.resize(shape_text.size() - 2);
  shape_text += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 npy_type_descr(type), shape_text);
  size_t total = 10 + dict.size() + 1;
  if (total < min_size) total = min_size;
  dict.append(total - (10 + dict.size() + 1) + (64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string header = std::string("\x93NUMPY\x01\x00", 8);
  header += char(dict.size() & 0xff);
  header += char(dict.size() >> 8);
  header += dict;
  return header;
}

void write_npy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data) {
  const std::string header = npy_header(type, shape);
  size_t count = 1;
  for (int64_t d : shape) count *= size_t(d);
  AtomicFile out(path);
  out.write(header.data(), header.size());
  out.write(data, count * npy_type_size(type));
  out.commit();
}

}  // namespace replica
