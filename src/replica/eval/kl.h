// The token-level KL surface: KL(reference ‖ model) per position, top-1 agreement (and the rest of
// ParityStats) of two models over held-out documents, scored in the same rolling windows as perplexity.
// Logits are compared over the smaller of the two vocabularies (a padded training vocab vs a truncated export).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/eval/parity.h"
#include "replica/eval/progress.h"
#include "replica/model/transformer.h"

namespace replica::eval {

struct DomainKl {
  std::string label;
  ParityStats stats;
};

// At most `max_positions` scored positions per file (0 = every token of every document). `progress` counts
// compared positions over all files.
std::vector<DomainKl> domain_kl(model::Transformer& reference, model::WeightSource& reference_weights,
                                model::Transformer& model, model::WeightSource& weights,
                                const std::vector<data::MixEntry>& files, int64_t window, int64_t max_positions,
                                Progress& progress);

}  // namespace replica::eval
