// Batched scoring without gradients: the log-probability of chosen target tokens under a model, the one
// primitive behind held-out loss, perplexity windows and task requests. The LM head runs only on scored rows.
#pragma once
#include <cstdint>
#include <vector>

#include "replica/eval/progress.h"
#include "replica/model/transformer.h"

namespace replica::eval {

// Positions start, start+1, ... of a sequence predict tokens[0], tokens[1], ... (position t is read from the
// logits after input t, so it predicts the token at t + 1 of the full text).
struct Span {
  int64_t start = 0;
  std::vector<int32_t> tokens;
};

// One model input and the spans scored on it. Requests with equal inputs share one Sequence (one forward).
struct Sequence {
  std::vector<int32_t> ids;
  std::vector<Span> spans;
};

struct SpanScore {
  double logprob = 0.0;  // Σ log p(token), log-softmax over the model's vocabulary in double
  bool greedy = true;    // every token's logit is its position's maximum (lm-eval's argmax, ties aside)
};

// Scores every span of every sequence, in order (flattened: sequence-major, then span). Sequences are
// sorted by length and batched with at most `batch_tokens` padded tokens per forward (one sequence at
// least); padding goes on the right, so it never changes a score. `progress` advances by each batch's input tokens
// (their total is input_tokens(seqs)).
std::vector<SpanScore> score_sequences(model::Transformer& model, model::WeightSource& weights,
                                       const std::vector<Sequence>& seqs, int64_t batch_tokens, Progress& progress);

// Σ input tokens of `seqs`: the work score_sequences reports.
int64_t input_tokens(const std::vector<Sequence>& seqs);

}  // namespace replica::eval
