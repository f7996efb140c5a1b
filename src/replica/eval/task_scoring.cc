// Task scoring: request encoding, shared forwards, acc / acc_norm / len_norm / bpb with stderr.
#include "replica/eval/task_scoring.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "replica/core/error.h"
#include "replica/core/pystr.h"
#include "replica/eval/score.h"

namespace replica::eval {
namespace {

int64_t argmax(const std::vector<double>& x) { return std::max_element(x.begin(), x.end()) - x.begin(); }

MetricValue mean_with_stderr(const std::string& name, const std::vector<double>& x) {
  const double n = double(x.size());
  double mean = 0.0, ss = 0.0;
  for (double v : x) mean += v / n;
  for (double v : x) ss += (v - mean) * (v - mean);
  return {name, mean, x.size() > 1 ? std::sqrt(ss / (n - 1.0)) / std::sqrt(n) : 0.0};
}

}  // namespace

TokenPair encode_pair(const data::Tokenizer& tok, const Request& r, TaskFormat format, int32_t prefix) {
  if (format == TaskFormat::olmes) return {tok.encode_model_input(r.context), tok.encode_model_input(r.continuation)};
  std::string ctx = py::rstrip(r.context);
  const std::string cont = r.context.substr(ctx.size()) + r.continuation;
  if (ctx.empty()) return {{prefix}, tok.encode_model_input(cont)};
  std::vector<int32_t> whole = tok.encode_model_input(ctx + cont), context = tok.encode_model_input(ctx);
  const size_t split = std::min(context.size(), whole.size());
  return {context, std::vector<int32_t>(whole.begin() + int64_t(split), whole.end())};
}

TaskResult evaluate_task(model::Transformer& model, model::WeightSource& weights, const data::Tokenizer& tok,
                         const Task& task, int64_t max_length, int64_t batch_tokens, Progress& progress) {
  const model::ModelConfig& c = model.config();
  const int64_t L = max_length > 0 ? std::min(max_length, c.max_seq_len) : c.max_seq_len;
  TaskResult result;
  result.name = task.name;
  result.format = task.format;
  result.docs = int64_t(task.docs.size());
  std::vector<Sequence> seqs;
  std::map<std::vector<int32_t>, size_t> by_input;
  std::vector<std::pair<size_t, size_t>> where;  // per request: (sequence, span)
  for (const TaskDoc& d : task.docs)
    for (const Request& r : d.requests) {
      TokenPair p = encode_pair(tok, r, task.format, int32_t(c.eos_token_id));
      check(!p.continuation.empty(), "task {}: continuation '{}' encodes to no tokens", task.name, r.continuation);
      check(int64_t(p.continuation.size()) <= L, "task {}: a continuation of {} tokens exceeds max_length {}",
            task.name, p.continuation.size(), L);
      check(!p.context.empty(), "task {}: empty context", task.name);
      std::vector<int32_t> all = p.context;
      all.insert(all.end(), p.continuation.begin(), p.continuation.end() - 1);
      std::vector<int32_t> input(all.end() - std::min<int64_t>(L, int64_t(all.size())), all.end());
      const int64_t start = int64_t(input.size()) - int64_t(p.continuation.size());
      auto [it, added] = by_input.try_emplace(input, seqs.size());
      if (added) seqs.push_back({std::move(input), {}});
      Sequence& s = seqs[it->second];
      where.push_back({it->second, s.spans.size()});
      s.spans.push_back({start, std::move(p.continuation)});
    }
  result.requests = int64_t(where.size());
  result.forwards = int64_t(seqs.size());
  std::vector<size_t> first_span(seqs.size() + 1, 0);
  for (size_t i = 0; i < seqs.size(); i++) first_span[i + 1] = first_span[i] + seqs[i].spans.size();
  progress.start(fmt::format("task {} ({} docs, {} requests)", task.name, result.docs, result.requests),
                 input_tokens(seqs));
  const std::vector<SpanScore> scores = score_sequences(model, weights, seqs, batch_tokens, progress);

  std::vector<double> acc, norm, bpb;
  size_t k = 0;
  for (const TaskDoc& d : task.docs) {
    std::vector<double> lls, normed;
    for (size_t i = 0; i < d.requests.size(); i++, k++) {
      const double ll = scores[first_span[where[k].first] + where[k].second].logprob;
      lls.push_back(ll);
      const int64_t chars = task.format == TaskFormat::lm_eval ? py::len(d.choices[i]) : py::len(d.requests[i].continuation);
      normed.push_back(ll / double(std::max<int64_t>(chars, 1)));
    }
    acc.push_back(argmax(lls) == d.gold ? 1.0 : 0.0);
    norm.push_back(argmax(normed) == d.gold ? 1.0 : 0.0);
    const std::string& gold = d.requests[size_t(d.gold)].continuation;
    bpb.push_back(-lls[size_t(d.gold)] / double(gold.size()) * std::numbers::log2e);
    result.logprobs.push_back(std::move(lls));
  }
  for (const std::string& m : task.metrics)
    result.metrics.push_back(mean_with_stderr(m, m == "acc" ? acc : m == "bpb" ? bpb : norm));
  return result;
}

}  // namespace replica::eval
