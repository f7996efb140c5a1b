// The rotary tables a model's attention reads (the Transformer's, for training, evaluation and, through the KV
// cache, generation): plain RoPE, and YaRN on the full-attention layers of a scaled model (ModelConfig::yarn_layer).
#pragma once
#include <cstdint>

#include "replica/kernels/backend.h"
#include "replica/kernels/rope_table.h"
#include "replica/model/config.h"

namespace replica::model {

// One table's cos and sin [T, D/2] in backend memory.
struct RopeBuffers {
  DeviceArray<float> cos, sin;
};

// The table for positions 0 … T − 1 of the layers that rotate with YaRN (`yarn`) or with plain RoPE.
RopeTable make_rope_table(const ModelConfig& config, int64_t T, bool yarn);

// Copies rows [first_row, T) of `table` into `to` (allocated by the caller with (T − first_row)·D/2 values each):
// a context-parallel slice's rows are those of its global positions (stage3.md §4.3).
void upload(Backend& backend, RopeBuffers& to, const RopeTable& table, int64_t first_row = 0);

}  // namespace replica::model
