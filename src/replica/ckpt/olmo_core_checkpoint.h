// OLMo-core checkpoints, as AI2 publishes OLMo 3's (olmo-checkpoints.org/ai2-llm/Olmo-3-1025-7B/stage1/stepN/):
// stepN/model_and_optim/ is a torch.distributed.checkpoint directory (ckpt/dcp.h) of the train module's state dict,
// flattened: model.<OLMo-core parameter> (fp32 master weights, sharded in chunks as FSDP held them),
// optim.state.<parameter>.<state> (the optimizer's state tensors by torch's names, which are replica's: AdamW's
// exp_avg and exp_avg_sq) and .step (a 0-dim fp32 count of the updates applied),
// optim.param_groups.<parameter>.<hyperparameter> (not read: the recipe sets the hyperparameters).
// stepN/train/ (the trainer's own state: global step, data position) is not read: a stage transition restarts the
// step, the schedule and the data (AI2 loaded with load_trainer_state=False). There is no HF config.json: the
// model's config comes from model.config.
#pragma once
#include <cstdint>
#include <string>

#include "replica/ckpt/checkpoint.h"
#include "replica/model/config.h"
#include "replica/model/params.h"

namespace replica::ckpt {

// True when `path` is an OLMo-core step directory (holding model_and_optim/.metadata) or such a
// model_and_optim directory itself (holding .metadata).
bool is_olmo_core_checkpoint(const std::string& path);

// The OLMo-core name of a replica (HF-named) parameter, e.g. model.layers.3.mlp.gate_proj.weight ->
// blocks.3.feed_forward.w1.weight; where the block norms go depends on `config`'s norm placement (OLMo-core's
// attention_norm is HF's post_attention_layernorm in OLMo 2/3, its input_layernorm in Llama).
std::string olmo_core_name(const std::string& hf_name, const model::ModelConfig& config);

// Reads the weights of every parameter of `table` into params and, when `optimizer` is given, the state tensors it
// names (optim.state.<parameter>.<name>) into its tensors (whole-buffer, laid out by the table); returns the
// optimizer's step count then (every parameter's .step must be the same whole number), else 0. Errors name the
// directory and the key: a missing tensor, a wrong shape, an unexpected model.* tensor that the config does not
// define.
int64_t read_olmo_core_checkpoint(const std::string& path, const model::ModelConfig& config,
                                  const model::ParamTable& table, float* params, OptimizerState* optimizer = nullptr);

}  // namespace replica::ckpt
