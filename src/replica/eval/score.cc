// Batched span scoring: forward to the final norm, gather the scored rows, LM head in row chunks, log-softmax.
#include "replica/eval/score.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "replica/core/error.h"
#include "replica/kernels/cpu/simd.h"

namespace replica::eval {
namespace {

constexpr int64_t kHeadRows = 64;  // LM-head rows per chunk: 64 × V floats at a time

// (max, log Σ exp) of a logit row: 16 fp32 lanes of the vectorised exp (as simd.h's native vectors), summed in double.
std::pair<float, double> max_and_lse(const float* x, int64_t n) {
  namespace simd = cpu::simd;
  const float m = simd::max_of(x, n);
  simd::native lanes[simd::kParts] = {};
  int64_t i = 0;
  for (; i + simd::kWidth <= n; i += simd::kWidth)
    for (int p = 0; p < simd::kParts; p++)
      lanes[p] += simd::exp(simd::load<simd::native>(x + i + p * simd::kNativeWidth) - m);
  double s = 0.0;
  for (; i < n; i++) s += std::exp(double(x[i]) - double(m));
  for (int j = 0; j < simd::kWidth; j++) s += double(simd::lane(lanes, j));
  return {m, double(m) + std::log(s)};
}

// One scored position of the batch: its row in [B*T] and the (token, span) pairs read from it.
struct Row {
  int64_t row;
  std::vector<std::pair<int32_t, size_t>> reads;
};

void score_batch(model::Transformer& model, model::WeightSource& weights, const std::vector<Sequence>& seqs,
                 const std::vector<size_t>& members, const std::vector<size_t>& first_span,
                 std::vector<SpanScore>& out) {
  const model::ModelConfig& c = model.config();
  const int64_t B = int64_t(members.size()), V = c.vocab_size;
  int64_t T = 0;
  for (size_t m : members) T = std::max(T, int64_t(seqs[m].ids.size()));
  T = std::min((T + 31) / 32 * 32, std::max(T, c.max_seq_len));  // fewer distinct shapes, fewer re-plans
  std::vector<int32_t> ids(size_t(B * T), 0);
  std::vector<Row> rows;
  std::unordered_map<int64_t, size_t> row_index;
  for (int64_t b = 0; b < B; b++) {
    const Sequence& s = seqs[members[size_t(b)]];
    std::copy(s.ids.begin(), s.ids.end(), ids.begin() + b * T);
    for (size_t k = 0; k < s.spans.size(); k++) {
      const Span& span = s.spans[k];
      check(span.start >= 0 && span.start + int64_t(span.tokens.size()) <= int64_t(s.ids.size()),
            "score: span [{}, {}) outside a sequence of {} tokens", span.start, span.start + int64_t(span.tokens.size()),
            s.ids.size());
      for (size_t j = 0; j < span.tokens.size(); j++) {
        const int64_t row = b * T + span.start + int64_t(j);
        auto [it, added] = row_index.try_emplace(row, rows.size());
        if (added) rows.push_back(Row{row, {}});
        rows[it->second].reads.push_back({span.tokens[j], first_span[members[size_t(b)]] + k});
      }
    }
  }
  model.forward_hidden(weights, ids.data(), B, T);
  std::vector<int64_t> chunk_rows(kHeadRows);
  std::vector<float> logits(size_t(kHeadRows * V));
  for (size_t r0 = 0; r0 < rows.size(); r0 += kHeadRows) {
    const int64_t n = std::min<int64_t>(kHeadRows, int64_t(rows.size() - r0));
    for (int64_t i = 0; i < n; i++) chunk_rows[size_t(i)] = rows[r0 + size_t(i)].row;
    model.head_logits(weights, chunk_rows.data(), n, logits.data());
    std::vector<std::pair<float, double>> stats(kHeadRows);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) stats[size_t(i)] = max_and_lse(logits.data() + i * V, V);
    for (int64_t i = 0; i < n; i++)
      for (const auto& [token, span] : rows[r0 + size_t(i)].reads) {
        check(token >= 0 && token < V, "score: target token {} is outside the vocabulary [0, {})", token, V);
        const float logit = logits[size_t(i * V + token)];
        out[span].logprob += double(logit) - stats[size_t(i)].second;
        out[span].greedy = out[span].greedy && logit == stats[size_t(i)].first;
      }
  }
}

}  // namespace

std::vector<SpanScore> score_sequences(model::Transformer& model, model::WeightSource& weights,
                                       const std::vector<Sequence>& seqs, int64_t batch_tokens, Progress& progress) {
  std::vector<size_t> first_span(seqs.size() + 1, 0);
  for (size_t i = 0; i < seqs.size(); i++) first_span[i + 1] = first_span[i] + seqs[i].spans.size();
  std::vector<SpanScore> out(first_span.back());
  std::vector<size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return seqs[a].ids.size() > seqs[b].ids.size(); });
  std::vector<size_t> members;
  int64_t batch_input = 0;
  auto score_members = [&] {
    score_batch(model, weights, seqs, members, first_span, out);
    progress.advance(batch_input);
    members.clear();
    batch_input = 0;
  };
  for (size_t i = 0; i < order.size(); i++) {
    const Sequence& s = seqs[order[i]];
    if (s.ids.empty()) continue;
    check(int64_t(s.ids.size()) <= model.config().max_seq_len, "score: a sequence of {} tokens exceeds the model's {}",
          s.ids.size(), model.config().max_seq_len);
    members.push_back(order[i]);
    batch_input += int64_t(s.ids.size());
    if (int64_t(members.size() + 1) * int64_t(seqs[members.front()].ids.size()) > batch_tokens) score_members();
  }
  if (!members.empty()) score_members();
  // A NaN log-probability compares false with everything, so a task would still report an accuracy from it.
  for (const SpanScore& sc : out)
    check(std::isfinite(sc.logprob),
          "score: the model's log-probabilities are not finite ({}): its weights hold NaN or Inf; no score is "
          "reported from them",
          sc.logprob);
  return out;
}

int64_t input_tokens(const std::vector<Sequence>& seqs) {
  int64_t n = 0;
  for (const Sequence& s : seqs) n += int64_t(s.ids.size());
  return n;
}

}  // namespace replica::eval
