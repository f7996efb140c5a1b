// Domain perplexity, Paloma-style: each document (EOS-separated in a token file, EOS not scored) is scored on
// its own in lm-eval's rolling windows (get_rolling_token_windows with context_len = 1 + make_disjoint_window:
// the first window is [EOS] + doc[:L-1]; later ones feed L tokens and score the next ≤ L, so no token is
// scored twice). Per domain: token perplexity exp(Σnll/Σtokens) and bits per byte Σnll / (Σbytes · ln 2), with
// bytes the UTF-8 bytes of the decoded document; macro averages over domains.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/data/tokenizer.h"
#include "replica/eval/score.h"
#include "replica/model/transformer.h"

namespace replica::eval {

struct DomainPerplexity {
  std::string label;
  double nll = 0.0;  // Σ over tokens, nats
  int64_t tokens = 0, bytes = 0, docs = 0, windows = 0;
  double ppl() const;            // exp(nll / tokens)
  double bits_per_byte() const;  // nll / (bytes · ln 2)
};

struct PerplexityResult {
  int64_t window = 0;  // L actually used (the configured length, capped at the model's context)
  std::vector<DomainPerplexity> domains;
  double macro_ppl() const;
  double macro_bits_per_byte() const;
};

// The rolling windows of one document `doc` (its ids, no EOS) with `prefix` as the first conditioning token:
// Sequences of ≤ L input tokens, one span each.
std::vector<Sequence> rolling_windows(const std::vector<int32_t>& doc, int32_t prefix, int64_t L);

// Scores at most `max_docs` documents (0 = all) of each file in `files`; batches of `batch_tokens`. `progress`
// sees one pass over every domain's windows.
PerplexityResult domain_perplexity(model::Transformer& model, model::WeightSource& weights,
                                   const data::Tokenizer& tokenizer, const std::vector<data::MixEntry>& files,
                                   int64_t window, int64_t max_docs, int64_t batch_tokens, Progress& progress);

}  // namespace replica::eval
