// make_rope_table: head_dim, rope_theta and, for YaRN layers, the rope scaling of the model config.
#include "replica/model/rope.h"

namespace replica::model {

RopeTable make_rope_table(const ModelConfig& config, int64_t T, bool yarn) {
  return yarn ? RopeTable(T, config.head_dim, config.rope_theta, *config.rope_scaling)
              : RopeTable(T, config.head_dim, config.rope_theta);
}

void upload(Backend& backend, RopeBuffers& to, const RopeTable& table, int64_t first_row) {
  const size_t skip = size_t(first_row * table.D / 2), bytes = (table.cos.size() - skip) * sizeof(float);
  backend.to_device(to.cos.data(), table.cos.data() + skip, bytes);
  backend.to_device(to.sin.data(), table.sin.data() + skip, bytes);
}

}  // namespace replica::model
