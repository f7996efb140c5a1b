// The optimizers a run can train with, by optim.name, and what the rest of replica may know of one without making
// it: the names of its state tensors (checkpoints store them by name, the memory plan counts them) and where they
// live. Adding an optimizer is a class behind optim/optimizer.h and a case in each function here
// (docs/architecture.md, "Add an optimizer").
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/params.h"
#include "replica/optim/adamw.h"
#include "replica/optim/optimizer.h"
#include "replica/optim/sgd.h"

namespace replica::optim {

enum class OptimizerName { adamw, sgd };
OptimizerName parse_optimizer_name(const std::string& text);  // "adamw" | "sgd", else replica::Error
const char* optimizer_name(OptimizerName name);

struct OptimizerConfig {
  OptimizerName name = OptimizerName::adamw;  // optim.name
  AdamWConfig adamw;                          // optim.weight_decay, betas, eps, host_moments
  SgdConfig sgd;                              // optim.momentum
};

// The state tensors an optimizer made from `config` keeps, in the order of its state_names(): {"exp_avg",
// "exp_avg_sq"} for AdamW, {"momentum_buffer"} for SGD with momentum, {} for plain SGD. Each holds one fp32 per
// parameter of the rank's shard.
std::vector<std::string> state_names(const OptimizerConfig& config);
// True when that state lives in host memory (AdamW's optim.host_moments): the device then holds only the staging
// buffers it streams through (kHostMomentStagingFloats).
bool state_in_host_memory(const OptimizerConfig& config);

// The optimizer of `parts` of the flat buffer (a data-parallel shard, DataParallel::shard_parts).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, const model::ParamTable& table,
                                          std::vector<Optimizer::Part> parts, Backend& backend);

}  // namespace replica::optim
