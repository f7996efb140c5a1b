// A model given by path: an HF model directory or a replica checkpoint directory (its weights; the model
// config is stored in train_state.json). What model.init_from, `replica forward`, `replica parity` and
// `replica export-hf` accept. model.init_from also takes an OLMo-core checkpoint, whose config model.config gives.
#pragma once
#include <string>

#include "replica/ckpt/hf.h"
#include "replica/kernels/backend.h"

namespace replica::ckpt {

// `path` itself, or, where it is a run directory (it holds checkpoints/ and is no checkpoint itself) or a run's
// checkpoints/ directory (step directories and no config.json), its latest complete checkpoint
// (find_latest_checkpoint); replica::Error naming the run when it has none.
std::string resolve_model_source(const std::string& path);

// The model config of `path`: a checkpoint's stored config, an HF directory's config.json, or a model file; an
// OLMo-core checkpoint has none (replica::Error saying to set model.config).
model::ModelConfig load_model_source_config(const std::string& path);

// Reads the weights of `path` into a buffer laid out by `table` (that of `config`), checking every tensor's shape. A
// checkpoint is verified first (manifest, checksums); an HF directory may have a truncated vocabulary
// (padded back with zero rows); an OLMo-core checkpoint (ckpt/olmo_core_checkpoint.h) gives its model.* tensors.
void load_model_source_params(const std::string& path, const model::ModelConfig& config, const model::ParamTable& table,
                              float* params);

// Config and weights together, of `path` or, for a run directory, of its latest checkpoint (resolve_model_source).
HfModel load_model_source(const std::string& path);

// The attention kernel to run `path`'s model with on `device` (Transformer::use_attention), so that evaluation and
// generation compute as the run did: the kernel its run recorded (train.attention of a replica checkpoint's recipe,
// as the trainer resolved it) where `device` has it (the CPU: fp32, cpu_bf16; CUDA: all but cpu_bf16), else
// automatic, as for a model that records none (an HF directory, an OLMo-core checkpoint).
AttentionKernel recorded_attention(const std::string& path, Device device);

}  // namespace replica::ckpt
