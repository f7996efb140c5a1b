// safetensors files: an 8-byte header length, a JSON header (name -> dtype, shape, data_offsets), raw data.
// Read through a memory map; written atomically.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "replica/core/mapped_file.h"

namespace replica::ckpt {

enum class StDtype { F32, BF16, F16 };

struct StTensorInfo {
  StDtype dtype;
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte range inside the data section
  size_t count() const;
};

class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);
  const std::string& path() const { return file_.path(); }
  const std::map<std::string, StTensorInfo>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const StTensorInfo& info(const std::string& name) const;
  // Copies tensor `name` into dst as fp32, checking that its shape is `expected_shape`.
  void read_f32(const std::string& name, const std::vector<int64_t>& expected_shape, float* dst) const;
  std::map<std::string, std::string> metadata;

 private:
  MappedFile file_;
  size_t data_start_ = 0;
  std::map<std::string, StTensorInfo> tensors_;
};

// A tensor to write: fp32 source data, stored as `dtype`.
struct StTensorOut {
  std::string name;
  std::vector<int64_t> shape;
  const float* data;
  StDtype dtype = StDtype::F32;
};

// Writes tensors in the given order (to path.tmp, then renamed).
void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace replica::ckpt
