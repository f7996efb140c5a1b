// Held-out loss: mean cross-entropy per token over the fixed-length instances of validation token files,
// per file and over all of them (token-weighted), in file order. The in-loop evaluation of training runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/model/olmo3.h"

namespace replica {

struct HeldoutFile {
  std::string label;
  double loss = 0.0;  // mean CE per labelled token
  int64_t tokens = 0;
};

struct HeldoutResult {
  double loss = 0.0;  // over all files, token-weighted
  int64_t tokens = 0;
  std::vector<HeldoutFile> files;
};

// Scores up to `max_batches` micro-batches of `micro_batch` instances from each file (0 = all of them).
HeldoutResult heldout_loss(Olmo3& model, const float* params, const data::FslDataset& set, int64_t micro_batch,
                           int64_t max_batches);

}  // namespace replica
