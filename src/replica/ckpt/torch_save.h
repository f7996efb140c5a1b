// What torch.save writes (PyTorch's zip serialization, torch >= 1.6): a zip of stored (uncompressed) entries,
// <archive>/data.pkl, a pickle whose tensors point through persistent ids at <archive>/data/<key>, the raw
// little-endian bytes of each storage. torch.distributed.checkpoint writes every tensor chunk of a .distcp file
// this way, one torch.save after the other. Read without Python: the zip's central directory, then data.pkl
// through the restricted unpickler (ckpt/pickle.h), which allows only the globals a plain tensor needs.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace replica::ckpt {

enum class TorchDtype { f32, bf16 };

const char* torch_dtype_name(TorchDtype dtype);  // "float32", "bfloat16" (torch's names)
size_t torch_dtype_size(TorchDtype dtype);

// One dense tensor: its elements, contiguous in row-major order, point into the bytes it was read from.
struct TorchTensor {
  TorchDtype dtype = TorchDtype::f32;
  std::vector<int64_t> shape;
  const char* data = nullptr;  // numel() * torch_dtype_size(dtype) bytes
  uint64_t numel() const;
};

// Reads the one tensor that torch.save wrote into `bytes` (which must outlive the result). `source` names it in
// errors ("dir/__0_0.distcp at byte 431"). Refused, naming what: a compressed or encrypted entry, a checksum
// mismatch, a big-endian archive, a storage of another dtype than float32 or bfloat16, a non-contiguous view, a
// storage too small for the view, anything else than one tensor.
TorchTensor read_torch_save_tensor(std::string_view bytes, const std::string& source);

}  // namespace replica::ckpt
