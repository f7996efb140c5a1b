// RopeTable: plain RoPE's angles in double, rounded once; YaRN's in fp32, operation by operation as OLMo-core's
// torch code computes them (so no product may be fused with a sum).
#pragma GCC optimize("fp-contract=off")
#include "replica/kernels/rope_table.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace replica {

double yarn_default_attention_factor(double factor) { return 0.1 * std::log(factor) + 1.0; }

std::vector<float> yarn_inv_freq(int64_t D, double theta, const YarnScaling& s) {
  const int64_t half = D / 2;
  // The head dimension whose frequency turns n times over the original context (Python floats: double).
  auto dim_from_rotations = [&](double n) {
    return double(D) * std::log(double(s.original_max_position_embeddings) / (n * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(theta));
  };
  const int64_t low = std::max(int64_t(std::floor(dim_from_rotations(s.beta_fast))), int64_t(0));
  const int64_t high = std::min(int64_t(std::ceil(dim_from_rotations(s.beta_slow))), half - 1);
  const float span = float(std::max(double(high - low), 1e-3));
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; j++) {
    const float exponent = float(2 * j) / float(D);
    const float extrapolation = 1.0f / float(std::pow(theta, double(exponent)));
    const float interpolation = extrapolation / float(s.factor);
    const float ramp = std::clamp((float(j) - float(low)) / span, 0.0f, 1.0f);  // 0 keeps, 1 divides by factor
    inv_freq[size_t(j)] = interpolation * ramp + extrapolation * (1.0f - ramp);
  }
  return inv_freq;
}

RopeTable::RopeTable(int64_t T_, int64_t D_, double theta)
    : T(T_), D(D_), cos(size_t(T_ * D_ / 2)), sin(cos.size()) {
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < D / 2; i++) {
      double angle = double(t) / std::pow(theta, double(2 * i) / double(D));
      cos[size_t(t * D / 2 + i)] = float(std::cos(angle));
      sin[size_t(t * D / 2 + i)] = float(std::sin(angle));
    }
}

RopeTable::RopeTable(int64_t T_, int64_t D_, double theta, const YarnScaling& scaling)
    : T(T_), D(D_), cos(size_t(T_ * D_ / 2)), sin(cos.size()) {
  const std::vector<float> inv_freq = yarn_inv_freq(D, theta, scaling);
  const float attention_factor = float(scaling.attention_factor);
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < D / 2; i++) {
      const float angle = float(t) * inv_freq[size_t(i)];
      cos[size_t(t * D / 2 + i)] = float(std::cos(double(angle))) * attention_factor;
      sin[size_t(t * D / 2 + i)] = float(std::sin(double(angle))) * attention_factor;
    }
}

}  // namespace replica
