// Held-out loss over validation token files, one truncated instance per document.
#include "replica/eval/heldout.h"

#include <fmt/format.h>

#include <algorithm>

#include "replica/eval/document_ranges.h"
#include "replica/eval/score.h"

namespace replica::eval {

HeldoutResult heldout_loss(model::Transformer& model, model::WeightSource& weights, const data::FslDataset& set,
                           int64_t micro_batch, int64_t max_docs, Progress& progress) {
  const int64_t T = std::min(set.seq_len(), model.config().max_seq_len);
  const uint32_t eos = uint32_t(model.config().eos_token_id);
  HeldoutResult result;
  result.seq_len = T;
  // Every file's instances first, so the progress line knows the whole pass.
  std::vector<HeldoutFile> files(set.num_files());
  std::vector<std::vector<Sequence>> seqs(set.num_files());
  int64_t total = 0;
  for (size_t f = 0; f < set.num_files(); f++) {
    const data::TokenFile& file = set.file(f);
    HeldoutFile& h = files[f];
    h.label = set.label(f);
    for (DocRange d : split_documents(file, eos, true, max_docs)) {
      d.end = std::min(d.end, d.begin + uint64_t(T));
      Sequence s{read_tokens(file, d, set.vocab_size()), {}};
      h.docs++;
      h.doc_tokens += int64_t(s.ids.size());
      if (s.ids.size() < 2) continue;
      s.spans.push_back({0, std::vector<int32_t>(s.ids.begin() + 1, s.ids.end())});
      h.tokens += int64_t(s.ids.size()) - 1;
      seqs[f].push_back(std::move(s));
    }
    total += input_tokens(seqs[f]);
  }
  progress.start(fmt::format("held-out loss ({} files, truncated to {} tokens)", set.num_files(), T), total);
  double total_nll = 0.0;
  for (size_t f = 0; f < set.num_files(); f++) {
    HeldoutFile& h = files[f];
    for (const SpanScore& sc : score_sequences(model, weights, seqs[f], micro_batch * T, progress)) h.nll -= sc.logprob;
    if (h.tokens == 0) continue;
    h.loss = h.nll / double(h.tokens);
    total_nll += h.nll;
    result.tokens += h.tokens;
    result.docs += h.docs;
    result.files.push_back(h);
  }
  result.loss = result.tokens > 0 ? total_nll / double(result.tokens) : 0.0;
  return result;
}

}  // namespace replica::eval
