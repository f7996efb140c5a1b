// A model's tensors on disk, opened and checked once, then read tensor by tensor: an HF model directory
// (model.safetensors, or shards named by model.safetensors.index.json; F32, BF16 or F16, a truncated vocabulary padded
// back with zero rows) or a replica checkpoint's model.safetensors (fp32, its manifest verified first). load_hf_params
// reads every tensor at once; StreamedWeights (streamed_weights.h) one group of the model at a time.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "replica/ckpt/safetensors.h"
#include "replica/model/params.h"

namespace replica::ckpt {

class ModelTensors {
 public:
  // Every tensor of `table` must be there with its shape, and nothing else (rotary inv_freq buffers aside);
  // replica::Error names the file and the tensor otherwise.
  ModelTensors(const std::string& dir, const model::ParamTable& table);

  // Parameter `e` of the table, as fp32, into dst[0, e.numel).
  void read(const model::ParamEntry& e, float* dst) const;
  // Every parameter inside `range` of the flat buffer into dst (dst[0] is offset range.begin); the alignment gaps
  // between tensors are set to zero, as in a buffer read whole.
  void read_range(model::ParamTable::Range range, float* dst) const;

 private:
  std::string dir_;
  model::ParamTable table_;  // a copy: the readers outlive whoever built the table
  std::map<std::string, std::unique_ptr<SafetensorsReader>> readers_;  // by file
  std::map<std::string, const SafetensorsReader*> reader_of_;          // by tensor
};

}  // namespace replica::ckpt
