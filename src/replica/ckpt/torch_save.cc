// torch.save archives: the zip central directory (zip64 included, as PyTorch always writes it), then data.pkl.
#include "replica/ckpt/torch_save.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <map>
#include <optional>
#include <set>

#include "replica/ckpt/pickle.h"
#include "replica/core/error.h"

namespace replica::ckpt {

const char* torch_dtype_name(TorchDtype dtype) { return dtype == TorchDtype::f32 ? "float32" : "bfloat16"; }
size_t torch_dtype_size(TorchDtype dtype) { return dtype == TorchDtype::f32 ? 4 : 2; }

uint64_t TorchTensor::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

namespace {

struct ZipEntry {
  uint64_t local_header = 0, size = 0;
  uint32_t crc = 0;
  uint16_t method = 0, flags = 0;
};

// Little-endian fields of a byte range, every read bounds-checked.
class Bytes {
 public:
  Bytes(std::string_view bytes, const std::string& source) : b_(bytes), source_(source) {}
  uint64_t get(uint64_t at, int width, const char* what) const {
    check(at <= b_.size() && uint64_t(width) <= b_.size() - at,
          "{}: truncated: the zip's {} at byte {} is past its "
          "end ({} bytes)",
          source_, what, at, b_.size());
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--) v = v << 8 | uint8_t(b_[at + uint64_t(i)]);
    return v;
  }
  std::string_view range(uint64_t at, uint64_t n, const char* what) const {
    check(at <= b_.size() && n <= b_.size() - at,
          "{}: truncated: the zip's {} ({} bytes at byte {}) is past its end "
          "({} bytes)",
          source_, what, n, at, b_.size());
    return b_.substr(at, n);
  }
  uint64_t size() const { return b_.size(); }

 private:
  std::string_view b_;
  const std::string& source_;
};

constexpr uint32_t kEndOfDirectory = 0x06054b50, kZip64Locator = 0x07064b50, kZip64End = 0x06064b50,
                   kDirectoryEntry = 0x02014b50, kLocalHeader = 0x04034b50;

// The entries of the central directory, by name.
std::map<std::string, ZipEntry> zip_directory(const Bytes& z, const std::string& source) {
  // The end-of-directory record is the last 22 bytes plus a comment of up to 65,535 (PyTorch writes none).
  std::optional<uint64_t> end;
  for (uint64_t back = 22; back <= std::min<uint64_t>(z.size(), 22 + 65535) && !end; back++)
    if (z.get(z.size() - back, 4, "end record") == kEndOfDirectory) end = z.size() - back;
  check(end.has_value(), "{}: not a torch.save archive (no zip end-of-directory record in its {} bytes)", source,
        z.size());
  uint64_t count = z.get(*end + 10, 2, "entry count"), dir_size = z.get(*end + 12, 4, "directory size"),
           dir_at = z.get(*end + 16, 4, "directory offset");
  if (*end >= 20 && z.get(*end - 20, 4, "zip64 locator") == kZip64Locator) {
    const uint64_t at = z.get(*end - 12, 8, "zip64 end offset");
    check(z.get(at, 4, "zip64 end record") == kZip64End,
          "{}: the zip64 locator points at byte {}, not at a zip64 end "
          "record",
          source, at);
    count = z.get(at + 32, 8, "zip64 entry count");
    dir_size = z.get(at + 40, 8, "zip64 directory size");
    dir_at = z.get(at + 48, 8, "zip64 directory offset");
  }
  z.range(dir_at, dir_size, "central directory");
  check(count <= dir_size / 46, "{}: {} zip entries cannot fit a central directory of {} bytes", source, count,
        dir_size);
  std::map<std::string, ZipEntry> entries;
  uint64_t at = dir_at;
  for (uint64_t i = 0; i < count; i++) {
    check(z.get(at, 4, "directory entry") == kDirectoryEntry,
          "{}: zip directory entry {} at byte {} has a bad "
          "signature",
          source, i, at);
    ZipEntry e;
    e.flags = uint16_t(z.get(at + 8, 2, "flags"));
    e.method = uint16_t(z.get(at + 10, 2, "method"));
    e.crc = uint32_t(z.get(at + 16, 4, "crc"));
    uint64_t compressed = z.get(at + 20, 4, "size"), size = z.get(at + 24, 4, "size");
    const uint64_t name_len = z.get(at + 28, 2, "name length"), extra_len = z.get(at + 30, 2, "extra length"),
                   comment_len = z.get(at + 32, 2, "comment length");
    e.local_header = z.get(at + 42, 4, "local header offset");
    const std::string name(z.range(at + 46, name_len, "entry name"));
    // The zip64 extra field holds, in this order, each 32-bit field that is saturated.
    const uint64_t extra_at = at + 46 + name_len;
    for (uint64_t x = extra_at; x + 4 <= extra_at + extra_len;) {
      const uint64_t id = z.get(x, 2, "extra id"), len = z.get(x + 2, 2, "extra length");
      if (id == 1) {
        uint64_t f = x + 4;
        auto widen = [&](uint64_t& field) {
          if (field != 0xffffffffu) return;
          check(f + 8 <= x + 4 + len, "{}: zip entry '{}' has a short zip64 field", source, name);
          field = z.get(f, 8, "zip64 field");
          f += 8;
        };
        widen(size);
        widen(compressed);
        widen(e.local_header);
      }
      x += 4 + len;
    }
    check(e.method == 0 && compressed == size,
          "{}: zip entry '{}' is compressed (method {}); torch.save stores "
          "entries uncompressed",
          source, name, e.method);
    check(!(e.flags & 1), "{}: zip entry '{}' is encrypted", source, name);
    e.size = size;
    check(entries.emplace(name, e).second, "{}: zip entry '{}' appears twice", source, name);
    at += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

// The bytes of one entry, its CRC-32 checked.
std::string_view entry_data(const Bytes& z, const std::string& name, const ZipEntry& e, const std::string& source) {
  check(z.get(e.local_header, 4, "local header") == kLocalHeader, "{}: zip entry '{}': no local header at byte {}",
        source, name, e.local_header);
  const uint64_t data_at = e.local_header + 30 + z.get(e.local_header + 26, 2, "name length") +
                           z.get(e.local_header + 28, 2, "extra length");
  const std::string_view data = z.range(data_at, e.size, "entry data");
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t done = 0; done < data.size();) {  // zlib takes 32-bit lengths
    const uInt n = uInt(std::min<uint64_t>(data.size() - done, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + done), n);
    done += n;
  }
  check(uint32_t(crc) == e.crc,
        "{}: zip entry '{}' fails its CRC-32 check (stored {:08x}, computed {:08x}): the "
        "file is damaged",
        source, name, e.crc, uint32_t(crc));
  return data;
}

const std::set<std::string> kTensorGlobals = {
    "torch._utils._rebuild_tensor_v2", "collections.OrderedDict", "torch.FloatStorage",
    "torch.BFloat16Storage",           "torch.HalfStorage",       "torch.DoubleStorage"};

std::vector<int64_t> int_tuple(const PyValue& v, const char* what, const std::string& source) {
  check(v.is(PyValue::Kind::tuple), "{}: the tensor's {} is {}, not a tuple", source, what, v.describe());
  std::vector<int64_t> out;
  for (const PyValue& x : v.items()) {
    const int64_t n = x.as_int();
    check(n >= 0, "{}: the tensor's {} has a negative entry {}", source, what, n);
    out.push_back(n);
  }
  return out;
}

}  // namespace

TorchTensor read_torch_save_tensor(std::string_view bytes, const std::string& source) {
  const Bytes z(bytes, source);
  const std::map<std::string, ZipEntry> entries = zip_directory(z, source);
  std::string archive;
  for (const auto& [name, e] : entries)
    if (name.ends_with("/data.pkl") && name.find('/') == name.size() - 9) {
      check(archive.empty(), "{}: two data.pkl entries in one archive", source);
      archive = name.substr(0, name.size() - 8);  // "archive/"
    }
  check(!archive.empty(), "{}: not a torch.save archive (no <archive>/data.pkl entry)", source);
  if (auto it = entries.find(archive + "byteorder"); it != entries.end()) {
    const std::string_view order = entry_data(z, it->first, it->second, source);
    check(order == "little", "{}: a {}-endian archive (this reader reads little-endian ones)", source, order);
  }
  const std::string pkl = archive + "data.pkl";
  const PickleTree tree = read_pickle(entry_data(z, pkl, entries.at(pkl), source), kTensorGlobals, source + " " + pkl);

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata]), where
  // storage is the persistent id ('storage', <dtype>Storage, key, location, numel).
  const PyValue root = tree.root();
  check(root.call_of() == "torch._utils._rebuild_tensor_v2" && root.items().size() >= 4,
        "{}: holds {}, not one tensor (torch._utils._rebuild_tensor_v2)", source, root.describe());
  const std::vector<PyValue>& args = root.items();
  check(args[0].is(PyValue::Kind::persistent), "{}: the tensor's storage is {}, not a persistent id", source,
        args[0].describe());
  const PyValue id = args[0].items()[0];
  check(id.is(PyValue::Kind::tuple) && id.items().size() == 5 && id.items()[0].is(PyValue::Kind::string) &&
            id.items()[0].as_string() == "storage" && id.items()[1].is(PyValue::Kind::global),
        "{}: the tensor's storage id is {}, not ('storage', type, key, location, numel)", source, id.describe());
  const std::string storage_type = id.items()[1].name();
  check(storage_type == "FloatStorage" || storage_type == "BFloat16Storage",
        "{}: a tensor of torch.{}; this reader reads float32 and bfloat16 tensors", source, storage_type);
  TorchTensor t;
  t.dtype = storage_type == "FloatStorage" ? TorchDtype::f32 : TorchDtype::bf16;
  const std::string key = id.items()[2].as_string();
  const int64_t storage_numel = id.items()[4].as_int();
  const int64_t offset = args[1].as_int();
  t.shape = int_tuple(args[2], "size", source);
  const std::vector<int64_t> stride = int_tuple(args[3], "stride", source);
  check(stride.size() == t.shape.size(), "{}: the tensor has {} sizes and {} strides", source, t.shape.size(),
        stride.size());
  uint64_t numel = 1;
  for (int64_t d : t.shape)
    check(!__builtin_mul_overflow(numel, uint64_t(d), &numel), "{}: the tensor's size {} overflows", source, t.shape);
  // Row-major strides, except where a dimension of 1 makes its stride irrelevant (or the tensor is empty).
  uint64_t expected = 1;
  for (size_t d = t.shape.size(); d-- > 0 && numel > 0;) {
    check(t.shape[d] == 1 || uint64_t(stride[d]) == expected, "{}: a non-contiguous tensor (size {}, stride {})",
          source, t.shape, stride);
    expected *= uint64_t(t.shape[d]);
  }
  check(offset >= 0 && storage_numel >= 0 && uint64_t(offset) <= uint64_t(storage_numel) &&
            numel <= uint64_t(storage_numel - offset),
        "{}: a tensor of {} elements at offset {} in a storage of {}", source, numel, offset, storage_numel);

  const std::string data_name = archive + "data/" + key;
  const auto it = entries.find(data_name);
  check(it != entries.end(), "{}: the tensor's storage entry '{}' is missing", source, data_name);
  const size_t width = torch_dtype_size(t.dtype);
  check(it->second.size / width == uint64_t(storage_numel) && it->second.size % width == 0,
        "{}: storage entry '{}' holds {} bytes, {} {} elements need {}", source, data_name, it->second.size,
        storage_numel, torch_dtype_name(t.dtype), uint64_t(storage_numel) * width);
  t.data = entry_data(z, data_name, it->second, source).data() + uint64_t(offset) * width;
  return t;
}

}  // namespace replica::ckpt
