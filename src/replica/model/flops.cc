// FLOP counting (see flops.h for the definition).
#include "replica/model/flops.h"

#include <algorithm>

namespace replica::model {

int64_t matmul_params(const ModelConfig& c) {
  const int64_t C = c.d_model;
  const int64_t per_layer = C * c.q_width() * 2 + C * c.kv_width() * 2 + 3 * C * c.ffn_hidden;
  return c.n_layers * per_layer + c.vocab_size * C;
}

double mean_visible_keys(int64_t T, int64_t window) {
  if (window <= 0 || window >= T) return double(T + 1) / 2.0;
  // Queries t < W see t + 1 keys; the remaining T − W see W.
  const double ramp = double(window) * double(window + 1) / 2.0;
  return (ramp + double(T - window) * double(window)) / double(T);
}

double training_flops_per_token(const ModelConfig& c, int64_t T) {
  double attention = 0.0;
  for (int64_t l = 0; l < c.n_layers; l++)
    attention += 12.0 * double(c.n_heads * c.head_dim) * mean_visible_keys(T, c.window(l));
  return 6.0 * double(matmul_params(c)) + attention;
}

}  // namespace replica::model
