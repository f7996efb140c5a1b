// rope_table: head_dim and rope_theta of the model config.
#include "replica/model/rope.h"

namespace replica::model {

std::unique_ptr<RopeTable> rope_table(const ModelConfig& config, int64_t T) {
  return std::make_unique<RopeTable>(T, config.head_dim, config.rope_theta);
}

}  // namespace replica::model
