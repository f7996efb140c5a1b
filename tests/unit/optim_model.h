// The model of the optimizer tests: one OLMo 3 block 4 wide over a vocabulary of 8, so that every kind of parameter
// (embedding, norms, projections, LM head) is in a flat buffer of a few hundred floats.
#pragma once
#include <nlohmann/json.hpp>

#include "replica/model/config.h"

namespace replica {

inline model::ModelConfig optim_test_model() {
  return model::model_config_from_json({{"model_type", "olmo3"},
                                        {"vocab_size", 8},
                                        {"hidden_size", 4},
                                        {"intermediate_size", 8},
                                        {"num_hidden_layers", 1},
                                        {"num_attention_heads", 1},
                                        {"num_key_value_heads", 1},
                                        {"head_dim", 4},
                                        {"sliding_window", 4}},
                                       "tiny test model");
}

}  // namespace replica
