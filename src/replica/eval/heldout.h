// Held-out loss, C4-validation style as OLMo-core's LM evaluator computes it: one instance per document
// (EOS-separated, closing EOS included), truncated to seq_len (the tail is dropped, no windowing), cross-entropy
// summed over the predicted tokens of every document and averaged per token, per file and over all files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/eval/progress.h"
#include "replica/model/transformer.h"

namespace replica::eval {

struct HeldoutFile {
  std::string label;
  double loss = 0.0;     // nll / tokens: mean CE per predicted token (the clean metric replica reports)
  double nll = 0.0;      // Σ CE over predicted tokens (nats)
  int64_t tokens = 0;    // predicted tokens: Σ (truncated document length − 1)
  int64_t docs = 0;
  int64_t doc_tokens = 0;  // Σ truncated document length; nll / doc_tokens is OLMo-core's logged "CE loss"
};

struct HeldoutResult {
  double loss = 0.0;  // over all files, token-weighted
  int64_t tokens = 0;
  int64_t docs = 0;     // over all files
  int64_t seq_len = 0;  // the truncation length used: the set's seq_len capped at the model's context
  std::vector<HeldoutFile> files;
};

// Scores the first `max_docs` documents of each file of `set` (0 = all; its seq_len is the truncation
// length), batched micro_batch × seq_len padded tokens at a time. The model's eos_token_id separates documents.
// `progress` sees one pass over every file's tokens.
HeldoutResult heldout_loss(model::Transformer& model, model::WeightSource& weights, const data::FslDataset& set,
                           int64_t micro_batch, int64_t max_docs, Progress& progress);

}  // namespace replica::eval
