// safetensors reader and writer.
#include "replica/ckpt/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

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

namespace {

// Parses the header, refusing a key that appears twice in one object: nlohmann keeps only the last of them,
// where the reference reader (serde) refuses the file.
json parse_header(const char* begin, const char* end, const std::string& path) {
  std::vector<std::set<std::string>> keys_of_open_objects;
  const json::parser_callback_t no_duplicates = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys_of_open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) keys_of_open_objects.pop_back();
    if (event == json::parse_event_t::key)
      check(keys_of_open_objects.back().insert(parsed.get<std::string>()).second,
            "{}: corrupt safetensors header (key '{}' appears twice)", path, parsed.get<std::string>());
    return true;
  };
  try {
    return json::parse(begin, end, no_duplicates);
  } catch (const json::exception& e) {
    fail("{}: corrupt safetensors header ({})", path, e.what());
  }
}

// A JSON array of non-negative integers (a shape, data offsets), or an Error naming the tensor and field.
std::vector<uint64_t> unsigned_list(const json& entry, const char* field, const std::string& name,
                                    const std::string& path) {
  const auto it = entry.find(field);
  check(it != entry.end() && it->is_array(), "{}: tensor '{}' needs '{}', a list of non-negative integers", path, name,
        field);
  std::vector<uint64_t> out;
  for (const json& v : *it) {
    check(v.is_number_unsigned(), "{}: tensor '{}': '{}' must be a list of non-negative integers, got {}", path, name,
          field, it->dump());
    out.push_back(v.get<uint64_t>());
  }
  return out;
}

StTensorInfo tensor_info(const json& entry, const std::string& name, const std::string& path) {
  check(entry.is_object(), "{}: tensor '{}' must be an object with dtype, shape and data_offsets, got {}", path, name,
        entry.dump());
  StTensorInfo info;
  const auto dtype = entry.find("dtype");
  check(dtype != entry.end() && dtype->is_string(), "{}: tensor '{}' needs a string 'dtype'", path, name);
  if (*dtype == "F32") info.dtype = StDtype::F32;
  else if (*dtype == "BF16") info.dtype = StDtype::BF16;
  else if (*dtype == "F16") info.dtype = StDtype::F16;
  else fail("{}: tensor '{}' has dtype {} (expected F32, BF16 or F16)", path, name, dtype->get<std::string>());
  size_t bytes = dtype_size(info.dtype);
  for (uint64_t d : unsigned_list(entry, "shape", name, path)) {
    check(d <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(bytes, d, &bytes),
          "{}: tensor '{}' has shape {} whose size does not fit in 64 bits", path, name, entry["shape"].dump());
    info.shape.push_back(int64_t(d));
  }
  const std::vector<uint64_t> offsets = unsigned_list(entry, "data_offsets", name, path);
  check(offsets.size() == 2, "{}: tensor '{}' has malformed data_offsets (expected [begin, end])", path, name);
  info.begin = offsets[0];
  info.end = offsets[1];
  check(info.end >= info.begin && info.end - info.begin == bytes,
        "{}: tensor '{}' has data_offsets [{}, {}] that do not match shape {} of {}", path, name, info.begin, info.end,
        shape_string(info.shape), dtype_name(info.dtype));
  return info;
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path) : file_(path) {
  check(file_.size() >= 8, "{}: truncated safetensors file ({} bytes, no header)", path, file_.size());
  uint64_t header_size;
  std::memcpy(&header_size, file_.data(), 8);
  check(header_size <= file_.size() - 8, "{}: truncated safetensors file (header of {} bytes, file has {})", path,
        header_size, file_.size());
  const json header = parse_header(file_.data() + 8, file_.data() + 8 + header_size, path);
  check(header.is_object(), "{}: corrupt safetensors header (expected a JSON object of tensors, got {})", path,
        header.type_name());
  data_start_ = 8 + header_size;
  const size_t data_size = file_.size() - data_start_;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      check(entry.is_object(), "{}: __metadata__ must be an object of strings", path);
      for (auto& [k, v] : entry.items()) {
        check(v.is_string(), "{}: __metadata__ '{}' must be a string, got {}", path, k, v.dump());
        metadata[k] = v.get<std::string>();
      }
      continue;
    }
    tensors_[name] = tensor_info(entry, name, path);
  }
  // As the reference reader does: the tensors tile the data section, in offset order, with no gap, no overlap
  // and nothing after the last one.
  std::vector<std::pair<const std::string*, const StTensorInfo*>> by_offset;
  for (const auto& [name, info] : tensors_) by_offset.emplace_back(&name, &info);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  size_t covered = 0;
  for (const auto& [name, info] : by_offset) {
    check(info->begin == covered, "{}: tensor '{}' starts at byte {} of the data section, expected {} ({})", path,
          *name, info->begin, covered, info->begin < covered ? "it overlaps the tensor before it" : "a gap before it");
    check(info->end <= data_size, "{}: truncated: tensor '{}' ends at byte {} of the data section, which has {}", path,
          *name, info->end, data_size);
    covered = info->end;
  }
  check(covered == data_size, "{}: {} bytes after the last tensor (the data section has {}, the tensors cover {})",
        path, data_size - covered, data_size, covered);
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
  // The tensor's pages are unmapped once copied: a model read tensor by tensor is never resident twice (its file
  // and its buffer), and a 7B model read one group at a time (ckpt/streamed_weights.h) never all at once.
  struct DropPages {
    const MappedFile& file;
    size_t begin, end;
    ~DropPages() { file.drop_pages(begin, end); }
  } drop{file_, data_start_ + t.begin, data_start_ + t.end};
  if (t.dtype == StDtype::F32) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  // A header of odd length leaves 16-bit data unaligned: such a tensor is copied out before it is read.
  std::vector<uint16_t> aligned;
  const auto* halves = reinterpret_cast<const uint16_t*>(src);
  if (reinterpret_cast<uintptr_t>(src) % alignof(uint16_t) != 0) {
    aligned.resize(n);
    std::memcpy(aligned.data(), src, n * 2);
    halves = aligned.data();
  }
  if (t.dtype == StDtype::BF16) {
    convert_to_float(reinterpret_cast<const bf16*>(halves), dst, n);
  } else {
    for (size_t i = 0; i < n; i++) dst[i] = half_to_float(halves[i]);
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
