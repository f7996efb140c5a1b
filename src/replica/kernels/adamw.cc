// adamw_scalars: torch's fp32 scalar math for one AdamW step.
#include "replica/kernels/adamw.h"

#include <cmath>

// Each product rounded on its own, as torch computes it (no fused multiply-adds).
#pragma GCC optimize("fp-contract=off")

namespace replica {

AdamWScalars adamw_scalars(double beta1, double beta2, double eps, double weight_decay, int64_t step_count, double lr) {
  AdamWScalars s;
  s.decay = 1.0f - float(lr * weight_decay);
  s.w1 = float(1 - beta1);
  s.keep1 = 1.0f - s.w1;
  s.w2 = float(1 - beta2);
  s.keep2 = 1.0f - s.w2;
  const float t = float(step_count);
  const float bc1 = 1.0f - std::pow(float(beta1), t);
  const float bc2 = 1.0f - std::pow(float(beta2), t);
  s.neg_step_size = -((1.0f / bc1) * float(lr));
  s.bc2_sqrt = std::sqrt(bc2);
  s.eps = float(eps);
  return s;
}

}  // namespace replica
