// KL(reference ‖ model) and top-1 agreement over held-out windows, the LM heads run in row chunks.
#include "replica/eval/kl.h"

#include <fmt/format.h>

#include <algorithm>

#include "replica/core/error.h"
#include "replica/eval/document_ranges.h"
#include "replica/eval/perplexity.h"

namespace replica::eval {
namespace {

constexpr int64_t kRows = 64;

// Logits of rows [row0, row0 + n) of `m`'s last forward_hidden through its LM head, keeping the first `V`
// columns.
void head_rows(model::Transformer& m, model::WeightSource& weights, int64_t row0, int64_t n, int64_t V,
               std::vector<float>& full, std::vector<float>& out) {
  const int64_t Vm = m.config().vocab_size;
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) rows[size_t(i)] = row0 + i;
  m.head_logits(weights, rows.data(), n, full.data());
  for (int64_t i = 0; i < n; i++) std::copy_n(full.begin() + i * Vm, V, out.begin() + i * V);
}

}  // namespace

std::vector<DomainKl> domain_kl(model::Transformer& reference, model::WeightSource& reference_weights,
                                model::Transformer& model, model::WeightSource& weights,
                                const std::vector<data::MixEntry>& files, int64_t window, int64_t max_positions,
                                Progress& progress) {
  const model::ModelConfig &rc = reference.config(), &mc = model.config();
  check(rc.eos_token_id == mc.eos_token_id, "kl: the models' eos_token_id differ ({} vs {})", rc.eos_token_id,
        mc.eos_token_id);
  const int64_t V = std::min(rc.vocab_size, mc.vocab_size), L = std::min({window, rc.max_seq_len, mc.max_seq_len});
  const uint32_t vocab = uint32_t(V);
  std::vector<float> full_ref(size_t(kRows * rc.vocab_size)), full_model(size_t(kRows * mc.vocab_size));
  std::vector<float> ref_logits(size_t(kRows * V)), model_logits(size_t(kRows * V));
  int64_t total = 0;  // every document token is one compared position, up to max_positions per file
  for (const data::MixEntry& entry : files) {
    data::TokenFile file(entry.path, data::TokenDtype::u32);
    int64_t positions = 0;
    for (DocRange r : split_documents(file, uint32_t(mc.eos_token_id), false, 0)) positions += int64_t(r.end - r.begin);
    total += max_positions > 0 ? std::min(positions, max_positions) : positions;
  }
  progress.start(fmt::format("KL vs the reference ({} files)", files.size()), total);
  std::vector<DomainKl> out;
  for (const data::MixEntry& entry : files) {
    data::TokenFile file(entry.path, data::TokenDtype::u32);
    DomainKl d{entry.label, {}};
    for (DocRange r : split_documents(file, uint32_t(mc.eos_token_id), false, 0)) {
      if (max_positions > 0 && d.stats.positions >= max_positions) break;
      for (const Sequence& s : rolling_windows(read_tokens(file, r, vocab), int32_t(mc.eos_token_id), L)) {
        const int64_t T = int64_t(s.ids.size()), start = s.spans[0].start;
        int64_t n = T - start;
        if (max_positions > 0) n = std::min(n, max_positions - d.stats.positions);
        if (n <= 0) break;
        reference.forward_hidden(reference_weights, s.ids.data(), 1, T);
        model.forward_hidden(weights, s.ids.data(), 1, T);
        for (int64_t r0 = 0; r0 < n; r0 += kRows) {
          const int64_t rows = std::min(kRows, n - r0);
          head_rows(reference, reference_weights, start + r0, rows, V, full_ref, ref_logits);
          head_rows(model, weights, start + r0, rows, V, full_model, model_logits);
          d.stats += compare_logits(ref_logits.data(), model_logits.data(), rows, V);
        }
        progress.advance(n);
      }
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace replica::eval
