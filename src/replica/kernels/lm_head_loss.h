// What the LM head's loss kernels of both backends share (kernels/cpu/lm_head_loss.h, kernels/cuda/lm_head_loss.h):
// the label that has no loss, the sums they return and the gradients they write. Header-only, so the CUDA library
// and the standalone GPU checks (tests/gpu) use them without libreplica.
#pragma once
#include <cstdint>

namespace replica {

// A target of kIgnoreLabel has no loss (OLMo-core's ignore index).
constexpr int32_t kIgnoreLabel = -100;

// The LM head's loss sums over labelled rows, with lse = logsumexp(logits).
struct LossSums {
  double ce = 0.0;  // Σ (lse − logit[target])
  double z = 0.0;   // Σ lse²
  int64_t n_labels = 0;
  LossSums& operator+=(const LossSums& o) {
    ce += o.ce;
    z += o.z;
    n_labels += o.n_labels;
    return *this;
  }
};

struct LmHeadGrads {
  float* dhidden;    // [N, C], overwritten
  float* dweight;    // [V, C], accumulated
  float grad_scale;  // d(loss)/d(Σ ce + z_coef Σ z): 1 / (labels in the whole optimizer batch)
};

}  // namespace replica
