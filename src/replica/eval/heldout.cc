// Held-out loss over validation token files.
#include "replica/eval/heldout.h"

#include <algorithm>

namespace replica {

HeldoutResult heldout_loss(Olmo3& model, const float* params, const data::FslDataset& set, int64_t micro_batch,
                           int64_t max_batches) {
  const int64_t T = set.seq_len();
  HeldoutResult result;
  double total_ce = 0.0;
  std::vector<int32_t> ids(size_t(micro_batch * T));
  for (size_t f = 0; f < set.num_files(); f++) {
    const uint64_t first = set.first_instance(f);
    const uint64_t end = f + 1 < set.num_files() ? set.first_instance(f + 1) : set.num_instances();
    uint64_t last = end;
    if (max_batches > 0) last = std::min(end, first + uint64_t(max_batches * micro_batch));
    LossSums sums;
    for (uint64_t i = first; i < last; i += uint64_t(micro_batch)) {
      const int64_t rows = int64_t(std::min<uint64_t>(uint64_t(micro_batch), last - i));
      for (int64_t r = 0; r < rows; r++) set.read_instance(i + uint64_t(r), ids.data() + r * T);
      std::vector<int32_t> targets = shifted_targets(ids.data(), rows, T);
      sums += model.forward_loss(params, Batch{ids.data(), targets.data(), rows, T}, 0.0f);
    }
    if (sums.n_labels == 0) continue;
    result.files.push_back({set.label(f), sums.ce / double(sums.n_labels), sums.n_labels});
    total_ce += sums.ce;
    result.tokens += sums.n_labels;
  }
  result.loss = result.tokens > 0 ? total_ce / double(result.tokens) : 0.0;
  return result;
}

}  // namespace replica
