// The planned peak of one model's evaluation.
#include "replica/reproduce/peak_memory.h"

#include <algorithm>

#include "replica/ckpt/streamed_weights.h"
#include "replica/model/params.h"
#include "replica/model/transformer.h"

namespace replica::reproduce {

std::vector<distributed::MemoryItem> peak_memory(const model::ModelConfig& config, Precision precision,
                                                 int64_t batch_tokens, WeightsMode mode) {
  const model::ParamTable table(config);
  const double params = double(table.total());
  const int64_t T = config.max_seq_len, B = std::max<int64_t>(1, batch_tokens / T);
  std::vector<distributed::MemoryItem> items;
  if (mode == WeightsMode::resident) {
    items.push_back({"weights", 4 * params, "fp32, one model at a time"});
    if (precision == Precision::bf16) items.push_back({"weights' bf16 copy", 2 * params, "for the GEMMs"});
  } else {
    items.push_back({"weights", double(ckpt::StreamedWeights::planned_bytes(table, precision)),
                     "streamed: the largest group a forward holds"});
  }
  items.push_back({"activations", double(model::Transformer::evaluation_activation_bytes(config, B, T, precision)),
                   "one evaluation forward of the suite's batch"});
  items.push_back({"LM-head scratch", 3.0 * 64 * double(config.vocab_size) * 4, "64 rows of logits, 3 buffers"});
  return items;
}

}  // namespace replica::reproduce
