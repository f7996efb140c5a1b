// Scoring multiple-choice tasks. lm-eval: trailing context whitespace moves into the continuation, the pair is
// encoded whole and split at len(encode(context)), metrics acc and acc_norm (Σ log p / len(choice) in code
// points). OLMES (OLMo's in-loop evaluator): context and continuation encoded separately, metrics acc, len_norm
// (÷ len(continuation) with its space) and bpb of the gold continuation (per-document mean). Both: inputs
// (context + continuation)[:-1] left-truncated to max_length, requests with equal inputs share one forward.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/tokenizer.h"
#include "replica/eval/progress.h"
#include "replica/eval/tasks.h"
#include "replica/model/transformer.h"

namespace replica::eval {

struct TokenPair {
  std::vector<int32_t> context, continuation;
};

// lm-eval's TemplateLM._encode_pair (lm-eval format) or OLMo's separate encoding (olmes). An empty context
// becomes [prefix] (lm-eval's prefix_token_id: dolma2 has no BOS, so EOS).
TokenPair encode_pair(const data::Tokenizer& tok, const Request& r, TaskFormat format, int32_t prefix);

struct MetricValue {
  std::string name;
  double value = 0.0, stderr = 0.0;  // stderr = sample stddev / sqrt(n) (lm-eval mean_stderr)
};

struct TaskResult {
  std::string name;
  TaskFormat format;
  int64_t docs = 0, requests = 0, forwards = 0;  // forwards: distinct model inputs
  std::vector<MetricValue> metrics;
  std::vector<std::vector<double>> logprobs;  // per doc, per choice: Σ log p(continuation)
};

// max_length 0: the model's max_position_embeddings. `progress` sees the task as one pass.
TaskResult evaluate_task(model::Transformer& model, model::WeightSource& weights, const data::Tokenizer& tok,
                         const Task& task, int64_t max_length, int64_t batch_tokens, Progress& progress);

}  // namespace replica::eval
