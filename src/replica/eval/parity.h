// Logit parity between a reference and a candidate model on the same tokens: per-position
// KL(reference ‖ candidate) of the softmax distributions, top-1 agreement, top-10 overlap and the largest
// absolute logit difference. What `replica parity` and the evaluation's KL surface report.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>

namespace replica::eval {

struct ParityStats {
  int64_t positions = 0;
  double kl_sum = 0.0, kl_max = 0.0;  // nats
  int64_t top1_agree = 0;
  double top10_overlap_sum = 0.0;     // |top10(ref) ∩ top10(cand)| / 10, summed over positions
  double max_abs_logit_diff = 0.0;

  double kl_mean() const { return positions ? kl_sum / double(positions) : 0.0; }
  double top1() const { return positions ? double(top1_agree) / double(positions) : 0.0; }
  double top10() const { return positions ? top10_overlap_sum / double(positions) : 0.0; }
  ParityStats& operator+=(const ParityStats& o);
  nlohmann::json to_json() const;
};

// Compares `rows` positions of logits [rows, V] (float32, row-major). Computed in double.
ParityStats compare_logits(const float* reference, const float* candidate, int64_t rows, int64_t V);

}  // namespace replica::eval
