// torch.distributed.checkpoint (DCP) directories, as FileSystemWriter and OLMo-core's RemoteFileSystemWriter write
// them: `.metadata`, a pickle of Metadata (state_dict_metadata: each flattened key's TensorStorageMetadata with its
// dtype, whole size and chunks, or BytesStorageMetadata for a non-tensor; storage_data: where each chunk's bytes are,
// MetadataIndex(fqn, offset) -> _StorageInfo(relative_path, offset, length)), and the `__<rank>_<n>.distcp` files
// holding, at those byte ranges, one torch.save archive per chunk (ckpt/torch_save.h). Read without Python: the
// metadata through the restricted unpickler with an allow-list of exactly these classes (torch 1.13 to 2.x
// module names, and OLMo-core's own _StorageInfo).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "replica/ckpt/torch_save.h"
#include "replica/core/mapped_file.h"

namespace replica::ckpt {

struct DcpChunk {
  std::vector<int64_t> offsets, sizes;  // where the chunk sits in the whole tensor
  std::string file;                     // relative to the directory
  uint64_t offset = 0, length = 0;      // its torch.save archive inside the file
};

struct DcpTensor {
  TorchDtype dtype = TorchDtype::f32;
  std::vector<int64_t> size;
  std::vector<DcpChunk> chunks;  // they tile the tensor exactly (checked when the metadata is read)
  uint64_t numel() const;
};

class DcpCheckpoint {
 public:
  // Reads and checks dir/.metadata; the .distcp files are opened when a tensor is read.
  explicit DcpCheckpoint(const std::string& dir);
  const std::string& dir() const { return dir_; }
  const std::map<std::string, DcpTensor>& tensors() const { return tensors_; }
  const std::vector<std::string>& byte_items() const { return byte_items_; }  // non-tensor keys (not read)
  const DcpTensor* find(const std::string& key) const;

  // Assembles tensor `key` from its chunks into `out` (numel floats, row-major), as fp32. Its size must be
  // `expected_shape`. Errors name the key and the file: a missing key, another shape, a chunk whose archive holds
  // another dtype or shape than the metadata says, a file too short for the byte range the metadata gives it.
  void read_f32(const std::string& key, const std::vector<int64_t>& expected_shape, float* out) const;

 private:
  const MappedFile& file(const std::string& relative) const;
  std::string dir_;
  std::map<std::string, DcpTensor> tensors_;
  std::vector<std::string> byte_items_;
  std::map<std::string, std::string> other_dtypes_;  // tensors of other dtypes: key -> torch's dtype name
  mutable std::map<std::string, std::unique_ptr<MappedFile>> files_;
};

}  // namespace replica::ckpt
