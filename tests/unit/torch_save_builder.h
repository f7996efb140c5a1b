// Test helper: torch.save archives built byte by byte, as PyTorch lays them out (a zip of stored entries
// archive/data.pkl and archive/data/0, the pickle calling torch._utils._rebuild_tensor_v2 on a persistent storage
// id), for the ckpt/torch_save and ckpt/dcp tests.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pickle_builder.h"

namespace replica::testing {

struct ZipEntry {
  std::string name, data;
  uint16_t method = 0;  // 0: stored
};

// A zip of `entries` (no zip64: the archives of these tests are small).
inline std::string zip(const std::vector<ZipEntry>& entries) {
  auto le = PickleBuilder::le;
  std::string out, directory;
  for (const ZipEntry& e : entries) {
    const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), uInt(e.data.size())));
    const std::string common = le(0, 2) + le(e.method, 2) + le(0, 4) + le(crc, 4) + le(e.data.size(), 4) +
                               le(e.data.size(), 4) + le(e.name.size(), 2) + le(0, 2);
    directory += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + common + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 4) +
                 le(out.size(), 4) + e.name;
    out += le(0x04034b50, 4) + le(20, 2) + common + e.name + e.data;
  }
  const size_t at = out.size();
  return out + directory + le(0x06054b50, 4) + le(0, 4) + le(entries.size(), 2) + le(entries.size(), 2) +
         le(directory.size(), 4) + le(at, 4) + le(0, 2);
}

// data.pkl of a tensor: _rebuild_tensor_v2(('storage', torch.<storage>, '0', 'cpu', numel), offset, size, stride,
// False, OrderedDict()).
inline std::string tensor_pickle(const std::string& storage, int64_t numel, int64_t offset,
                                 const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  PickleBuilder b;
  b.global("torch._utils", "_rebuild_tensor_v2").mark();
  b.mark().str("storage").global("torch", storage).str("0").str("cpu").integer(numel).tuple().op('Q');
  b.integer(offset).mark();
  for (int64_t d : size) b.integer(d);
  b.tuple().mark();
  for (int64_t d : stride) b.integer(d);
  b.tuple().op('\x89').global("collections", "OrderedDict").op(')').reduce();
  return b.tuple().reduce().done();
}

inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& size) {
  std::vector<int64_t> stride(size.size(), 1);
  for (size_t d = size.size(); d-- > 1;) stride[d - 1] = stride[d] * size[d];
  return stride;
}

// torch.save(torch.tensor(values).reshape(size)) of float32 values.
inline std::string saved_f32(const std::vector<float>& values, const std::vector<int64_t>& size) {
  std::string data(values.size() * 4, '\0');
  std::memcpy(data.data(), values.data(), data.size());
  return zip(
      {{"archive/data.pkl", tensor_pickle("FloatStorage", int64_t(values.size()), 0, size, contiguous_strides(size))},
       {"archive/data/0", data},
       {"archive/version", "3\n"}});
}

}  // namespace replica::testing
