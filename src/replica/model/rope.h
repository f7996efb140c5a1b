// The rotary tables a model's attention reads, built from its config in one place for the Transformer (training,
// evaluation) and the Decoder (generation), so that a change of RoPE (a scaling such as YaRN) reaches both.
#pragma once
#include <memory>

#include "replica/kernels/rope_table.h"
#include "replica/model/config.h"

namespace replica::model {

// The table for positions 0 … T − 1.
std::unique_ptr<RopeTable> rope_table(const ModelConfig& config, int64_t T);

}  // namespace replica::model
