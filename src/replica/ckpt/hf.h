// Hugging Face model directories: config.json + model.safetensors, or sharded model-0000k-of-0000n.safetensors
// with model.safetensors.index.json. F32, BF16 and F16 tensors are read into the flat fp32 buffer.
#pragma once
#include <string>
#include <vector>

#include "replica/model/config.h"
#include "replica/model/params.h"

namespace replica {

struct HfModel {
  ModelConfig config;
  std::vector<float> params;  // laid out by ParamTable(config)
};

// Reads every parameter; a missing or unexpected tensor, a wrong shape or a truncated file is an Error
// naming the tensor and the file.
HfModel load_hf_model(const std::string& dir);
void load_hf_params(const std::string& dir, const ParamTable& table, float* params);

}  // namespace replica
