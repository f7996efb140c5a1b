// Paloma-style perplexity and bits per byte per domain.
#include "replica/eval/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "replica/eval/document_ranges.h"

namespace replica::eval {

double DomainPerplexity::ppl() const { return tokens > 0 ? std::exp(nll / double(tokens)) : 0.0; }
double DomainPerplexity::bits_per_byte() const { return bytes > 0 ? nll / (double(bytes) * std::numbers::ln2) : 0.0; }

double PerplexityResult::macro_ppl() const {
  double s = 0.0;
  for (const DomainPerplexity& d : domains) s += d.ppl();
  return domains.empty() ? 0.0 : s / double(domains.size());
}

double PerplexityResult::macro_bits_per_byte() const {
  double s = 0.0;
  for (const DomainPerplexity& d : domains) s += d.bits_per_byte();
  return domains.empty() ? 0.0 : s / double(domains.size());
}

std::vector<Sequence> rolling_windows(const std::vector<int32_t>& doc, int32_t prefix, int64_t L) {
  std::vector<Sequence> windows;
  const int64_t n = int64_t(doc.size());
  if (n == 0) return windows;
  const int64_t first = std::min(L, n);
  Sequence w;
  w.ids.push_back(prefix);
  w.ids.insert(w.ids.end(), doc.begin(), doc.begin() + first - 1);
  w.spans.push_back({0, std::vector<int32_t>(doc.begin(), doc.begin() + first)});
  windows.push_back(std::move(w));
  for (int64_t predicted = first; predicted < n;) {
    const int64_t len = std::min(n - predicted, L), end = predicted + len;
    // Input doc[end-L-1, end-1) predicts doc[end-L, end); the last `len` of those are scored.
    Sequence s;
    s.ids.assign(doc.begin() + (end - L - 1), doc.begin() + (end - 1));
    s.spans.push_back({L - len, std::vector<int32_t>(doc.begin() + predicted, doc.begin() + end)});
    windows.push_back(std::move(s));
    predicted = end;
  }
  return windows;
}

PerplexityResult domain_perplexity(model::Transformer& model, model::WeightSource& weights,
                                   const data::Tokenizer& tokenizer, const std::vector<data::MixEntry>& files,
                                   int64_t window, int64_t max_docs, int64_t batch_tokens, Progress& progress) {
  const model::ModelConfig& c = model.config();
  PerplexityResult result;
  result.window = std::min(window, c.max_seq_len);
  // Every domain's windows first, so the progress line knows the whole pass.
  std::vector<std::vector<Sequence>> seqs(files.size());
  int64_t total = 0;
  for (size_t f = 0; f < files.size(); f++) {
    data::TokenFile file(files[f].path, data::TokenDtype::u32);
    DomainPerplexity d;
    d.label = files[f].label;
    for (DocRange r : split_documents(file, uint32_t(c.eos_token_id), false, max_docs)) {
      std::vector<int32_t> doc = read_tokens(file, r, uint32_t(c.vocab_size));
      if (doc.empty()) continue;
      d.docs++;
      d.tokens += int64_t(doc.size());
      for (int32_t id : doc) d.bytes += int64_t(tokenizer.token_bytes(uint32_t(id)).size());
      for (Sequence& s : rolling_windows(doc, int32_t(c.eos_token_id), result.window)) seqs[f].push_back(std::move(s));
    }
    d.windows = int64_t(seqs[f].size());
    total += input_tokens(seqs[f]);
    result.domains.push_back(d);
  }
  progress.start(fmt::format("perplexity ({} domains, windows of {} tokens)", files.size(), result.window), total);
  for (size_t f = 0; f < files.size(); f++)
    for (const SpanScore& sc : score_sequences(model, weights, seqs[f], batch_tokens, progress))
      result.domains[f].nll -= sc.logprob;
  return result;
}

}  // namespace replica::eval
