// The planned peak of one model's evaluation.
#include "replica/reproduce/peak_memory.h"

#include <algorithm>

#include "replica/model/params.h"
#include "replica/model/transformer.h"

namespace replica::reproduce {

std::vector<dist::MemoryItem> peak_memory(const model::ModelConfig& config, Precision precision, int64_t batch_tokens) {
  const double params = double(model::ParamTable(config).total());
  const int64_t T = config.max_seq_len, B = std::max<int64_t>(1, batch_tokens / T);
  std::vector<dist::MemoryItem> items = {{"weights", 4 * params, "fp32, one model at a time"}};
  if (precision == Precision::bf16) items.push_back({"weights' bf16 copy", 2 * params, "for the GEMMs"});
  items.push_back({"activations",
                   double(model::Transformer::activation_bytes(config, model::Remat::none, B, T, precision)),
                   "one forward of the suite's batch (the training bound)"});
  items.push_back({"LM-head scratch", 3.0 * 64 * double(config.vocab_size) * 4, "64 rows of logits, 3 buffers"});
  return items;
}

}  // namespace replica::reproduce
