// safetensors reader and writer.
#include "replica/ckpt/safetensors.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "replica/core/bf16.h"
#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::ckpt {

using nlohmann::json;

static size_t dtype_size(StDtype d) { return d == StDtype::F32 ? 4 : 2; }

static const char* dtype_name(StDtype d) {
  switch (d) {
    case StDtype::F32: return "F32";
    case StDtype::BF16: return "BF16";
    case StDtype::F16: return "F16";
  }
  return "";
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t StTensorInfo::count() const {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    int e = -1;
    do { mant <<= 1; e++; } while (!(mant & 0x400));
    bits = sign | uint32_t(112 - e) << 23 | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

SafetensorsReader::SafetensorsReader(const std::string& path) : file_(path) {
  check(file_.size() >= 8, "{}: truncated safetensors file ({} bytes, no header)", path, file_.size());
  uint64_t header_size;
  std::memcpy(&header_size, file_.data(), 8);
  check(header_size <= file_.size() - 8, "{}: truncated safetensors file (header of {} bytes, file has {})", path,
        header_size, file_.size());
  json header;
  try {
    header = json::parse(file_.data() + 8, file_.data() + 8 + header_size);
  } catch (const json::exception& e) {
    fail("{}: corrupt safetensors header ({})", path, e.what());
  }
  data_start_ = 8 + header_size;
  size_t data_size = file_.size() - data_start_;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      for (auto& [k, v] : entry.items()) metadata[k] = v.get<std::string>();
      continue;
    }
    StTensorInfo info;
    std::string dtype = entry.at("dtype").get<std::string>();
    if (dtype == "F32") info.dtype = StDtype::F32;
    else if (dtype == "BF16") info.dtype = StDtype::BF16;
    else if (dtype == "F16") info.dtype = StDtype::F16;
    else fail("{}: tensor '{}' has dtype {} (expected F32, BF16 or F16)", path, name, dtype);
    info.shape = entry.at("shape").get<std::vector<int64_t>>();
    auto offsets = entry.at("data_offsets").get<std::vector<size_t>>();
    check(offsets.size() == 2, "{}: tensor '{}' has malformed data_offsets", path, name);
    info.begin = offsets[0];
    info.end = offsets[1];
    check(info.end >= info.begin && info.end - info.begin == info.count() * dtype_size(info.dtype), "{}: tensor '{}' "
          "has data_offsets [{}, {}] that do not match shape {} of {}", path, name, info.begin, info.end,
          shape_string(info.shape), dtype);
    check(info.end <= data_size, "{}: truncated: tensor '{}' ends at byte {} of the data section, which has {}", path,
          name, info.end, data_size);
    tensors_[name] = info;
  }
}

const StTensorInfo& SafetensorsReader::info(const std::string& name) const {
  auto it = tensors_.find(name);
  check(it != tensors_.end(), "{}: missing tensor '{}'", path(), name);
  return it->second;
}

void SafetensorsReader::read_f32(const std::string& name, const std::vector<int64_t>& expected_shape,
                                 float* dst) const {
  const StTensorInfo& t = info(name);
  check(t.shape == expected_shape, "{}: tensor '{}' has shape {}, expected {}", path(), name, shape_string(t.shape),
        shape_string(expected_shape));
  const char* src = file_.data() + data_start_ + t.begin;
  size_t n = t.count();
  if (t.dtype == StDtype::F32) {
    std::memcpy(dst, src, n * 4);
  } else if (t.dtype == StDtype::BF16) {
    convert_to_float(reinterpret_cast<const bf16*>(src), dst, n);
  } else {
    const auto* h = reinterpret_cast<const uint16_t*>(src);
    for (size_t i = 0; i < n; i++) dst[i] = half_to_float(h[i]);
  }
}

void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const StTensorOut& t : tensors) {
    size_t n = 1;
    for (int64_t d : t.shape) n *= size_t(d);
    size_t bytes = n * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  uint64_t header_size = text.size();
  AtomicFile out(path);
  out.write(&header_size, 8);
  out.write(text.data(), text.size());
  std::vector<bf16> scratch;
  for (const StTensorOut& t : tensors) {
    size_t n = 1;
    for (int64_t d : t.shape) n *= size_t(d);
    if (t.dtype == StDtype::F32) {
      out.write(t.data, n * 4);
    } else {
      check(t.dtype == StDtype::BF16, "{}: writing F16 is not supported", path);
      scratch.resize(n);
      convert_to_bf16(t.data, scratch.data(), n);
      out.write(scratch.data(), n * 2);
    }
  }
  out.commit();
}

}  // namespace replica::ckpt
