// Hugging Face model directories: config.json + model.safetensors, or sharded model-0000k-of-0000n.safetensors
// with model.safetensors.index.json. F32, BF16 and F16 tensors are read into the flat fp32 buffer; F32 or
// BF16 written. The vocabulary may be truncated on export (OLMo-core's 100,352 → 100,278) and is padded
// back with zero rows on import into a model whose config pads it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "replica/ckpt/safetensors.h"
#include "replica/model/config.h"
#include "replica/model/params.h"

namespace replica::ckpt {

struct HfModel {
  model::ModelConfig config;
  std::vector<float> params;  // laid out by ParamTable(config)
};

// Reads every parameter; a missing or unexpected tensor, a wrong shape or a truncated file is an Error
// naming the tensor and the file. model.embed_tokens.weight and lm_head.weight may have fewer rows than
// the table (a truncated vocabulary): the missing rows are set to zero.
HfModel load_hf_model(const std::string& dir);
void load_hf_params(const std::string& dir, const model::ParamTable& table, float* params);

struct HfExportOptions {
  StDtype dtype = StDtype::F32;
  int64_t vocab = 0;                        // rows of the embedding and LM head kept; 0 = the model's vocab
  uint64_t max_shard_bytes = 5000000000;    // above this, tensors go to model-0000k-of-0000n.safetensors shards
  std::map<std::string, std::string> extra_files;  // name → content, written beside them (the tokenizer's files)
};

// Writes config.json (Olmo3Config, vocab_size = the exported vocab), generation_config.json (the model's EOS and
// pad ids), the weights (in table order) and options.extra_files to `out`, which must not exist or be empty.
// Everything goes to out.partial/ first and is renamed when complete. The output is a pure function of
// (config, params, options): exports are byte-reproducible.
void export_hf(const model::ModelConfig& config, const model::ParamTable& table, const float* params,
               const std::string& out, const HfExportOptions& options);

}  // namespace replica::ckpt
