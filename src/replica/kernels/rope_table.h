// The rotary embedding's cos and sin tables, computed once on the host per sequence length and uploaded by the
// model for every backend's RoPE (kernels/cpu/rope.h states the rotation): plain RoPE, or YaRN-scaled as OLMo-core
// computes it for the full-attention layers of OLMo 3's stage 3 (docs/model.md "RoPE and YaRN").
#pragma once
#include <cstdint>
#include <vector>

namespace replica {

// YaRN (HF rope_scaling {"rope_type": "yarn", ...}; OLMo-core YaRNRoPEScalingConfig).
struct YarnScaling {
  double factor = 8.0;                             // context extension: the lowest frequencies are divided by it
  int64_t original_max_position_embeddings = 8192;  // OLMo-core old_context_len
  double beta_fast = 32.0;                         // rotations at which the ramp starts (frequencies kept above)
  double beta_slow = 1.0;                          // rotations at which it ends (frequencies divided below)
  double attention_factor = 1.2079441541679836;    // multiplies cos and sin: 0.1·ln(factor) + 1 by default
  bool operator==(const YarnScaling&) const = default;
};

// OLMo-core's default attention factor for `factor` (YaRN paper §3.4): 0.1·ln(factor) + 1.
double yarn_default_attention_factor(double factor);

// OLMo-core's YaRN inverse frequencies [D/2] (nn/rope.py compute_scaled_inv_freq), every operation in fp32 as
// torch does it: extrap = 1 / fp32(theta^(2j/D)), interp = extrap / factor, blended by the linear ramp
// clamp((j − low) / max(high − low, 1e-3), 0, 1) with low = max(floor(d(beta_fast)), 0),
// high = min(ceil(d(beta_slow)), D/2 − 1), d(n) = D·ln(original / (2π·n)) / (2·ln theta) in double.
std::vector<float> yarn_inv_freq(int64_t D, double theta, const YarnScaling& scaling);

struct RopeTable {
  int64_t T = 0, D = 0;
  std::vector<float> cos, sin;  // [T, D/2]
  // Plain RoPE: cos and sin of t / theta^(2i/D), the angle in double, rounded once (stages 1-2).
  RopeTable(int64_t T, int64_t D, double theta);
  // YaRN as OLMo-core: angle = fp32(t) · inv_freq (one fp32 product), cos and sin of that fp32 angle rounded once,
  // each then multiplied by fp32(attention_factor) in fp32.
  RopeTable(int64_t T, int64_t D, double theta, const YarnScaling& scaling);
};

}  // namespace replica
