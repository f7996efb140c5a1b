// FLOPs per token of training (forward + backward), the one definition used by plans, logs and MFU:
//   6 · N_matmul  +  Σ_layers 12 · H · D · keys(layer)
// N_matmul counts the weights of every matrix multiply (q, k, v, o, gate, up, down, LM head; not the
// embedding, which is a gather). Attention does 2·H·D FLOPs for QKᵀ and 2·H·D for PV per visible key in the
// forward pass and twice that backward; keys(layer) is the mean number of visible keys per query at
// sequence length T: (T + 1) / 2 for causal full attention, capped by the window on sliding layers.
#pragma once
#include <cstdint>

#include "replica/model/config.h"

namespace replica::model {

int64_t matmul_params(const ModelConfig& config);
double mean_visible_keys(int64_t T, int64_t window);
double training_flops_per_token(const ModelConfig& config, int64_t T);

}  // namespace replica::model
