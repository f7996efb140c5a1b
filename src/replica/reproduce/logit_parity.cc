// Reference logits to disk, candidate logits against them.
#include "replica/reproduce/logit_parity.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <filesystem>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/mapped_file.h"
#include "replica/core/npy.h"
#include "replica/core/sha256.h"
#include "replica/data/token_file.h"

namespace replica::reproduce {
namespace {

constexpr int64_t kRows = 64;  // LM-head rows per call: 64 × V floats of scratch, not T × V

KlTokens with_hash(KlTokens t) {
  Sha256 sha;
  const int64_t shape[2] = {t.B, t.T};
  sha.update(shape, sizeof shape);
  sha.update(t.ids.data(), t.ids.size() * sizeof(int32_t));
  t.hash = sha.hex();
  return t;
}

// Runs `model` over each sequence and hands `consume(b, row0, rows, logits [rows, V])` its logits in row chunks.
template <typename Consume>
void each_logit_chunk(model::Transformer& model, model::WeightSource& weights, const KlTokens& tokens,
                      Consume consume) {
  const int64_t V = model.config().vocab_size;
  check(tokens.T <= model.config().max_seq_len, "KL tokens: sequences of {} tokens exceed the model's context of {}",
        tokens.T, model.config().max_seq_len);
  std::vector<float> logits(size_t(kRows * V));
  std::vector<int64_t> rows(static_cast<size_t>(kRows));
  for (int64_t b = 0; b < tokens.B; b++) {
    model.forward_hidden(weights, tokens.ids.data() + b * tokens.T, 1, tokens.T);
    for (int64_t r0 = 0; r0 < tokens.T; r0 += kRows) {
      const int64_t n = std::min(kRows, tokens.T - r0);
      for (int64_t i = 0; i < n; i++) rows[size_t(i)] = r0 + i;
      model.head_logits(weights, rows.data(), n, logits.data());
      consume(b, r0, n, logits.data());
    }
  }
}

}  // namespace

KlTokens read_kl_tokens(const std::string& path) {
  std::vector<int64_t> shape;
  const std::vector<int64_t> ids64 = read_npy_ids(path, &shape);
  check(shape.size() == 1 || shape.size() == 2, "{}: token ids must have shape [B, T] or [T]", path);
  KlTokens t;
  t.B = shape.size() == 2 ? shape[0] : 1;
  t.T = shape.back();
  check(t.B > 0 && t.T > 0, "{}: no token ids", path);
  t.ids.resize(ids64.size());
  for (size_t i = 0; i < ids64.size(); i++) {
    check(ids64[i] >= 0 && ids64[i] <= INT32_MAX, "{}: token id {} at index {} is negative or too large", path,
          ids64[i], i);
    t.ids[i] = int32_t(ids64[i]);
  }
  t.source = path;
  return with_hash(std::move(t));
}

KlTokens cut_kl_tokens(const std::string& token_file, int64_t rows, int64_t T, int64_t vocab) {
  const data::TokenFile file(token_file, data::TokenDtype::u32);
  const int64_t available = int64_t(file.num_tokens());
  check(available >= T, "{}: {} tokens, too few for one KL sequence of {}", token_file, available, T);
  KlTokens t;
  t.B = std::min(rows, available / T);
  t.T = T;
  t.ids.resize(size_t(t.B * T));
  file.read(0, uint64_t(t.B * T), t.ids.data(), uint32_t(vocab));
  t.source = token_file;
  return with_hash(std::move(t));
}

void write_reference_logits(model::Transformer& model, model::WeightSource& weights, const KlTokens& tokens,
                            const std::string& path) {
  const int64_t V = model.config().vocab_size;
  AtomicFile out(path);
  const std::string header = npy_header(NpyType::f32, {tokens.B, tokens.T, V});
  out.write(header.data(), header.size());
  each_logit_chunk(model, weights, tokens, [&](int64_t, int64_t, int64_t n, const float* logits) {
    out.write(logits, size_t(n * V) * sizeof(float));
  });
  out.commit();
}

eval::ParityStats compare_with_reference_logits(model::Transformer& model, model::WeightSource& weights,
                                                const KlTokens& tokens, const std::string& path) {
  // Read in row chunks, not memory-mapped: a mapped 7B file of logits would count its touched pages as resident.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  check(file != nullptr, "{}: cannot open the reference logits", path);
  const NpyHeader h = [&] {
    const MappedFile mapped(path);  // only the header's page is touched
    return parse_npy_header(mapped.data(), mapped.size(), path);
  }();
  check(h.type == NpyType::f32 && h.shape.size() == 3 && h.shape[0] == tokens.B && h.shape[1] == tokens.T,
        "{}: reference logits are not float32 [{}, {}, V]", path, tokens.B, tokens.T);
  const int64_t Vr = h.shape[2], Vc = model.config().vocab_size, V = std::min(Vr, Vc);
  check(std::filesystem::file_size(path) >= h.data_offset + size_t(tokens.B * tokens.T * Vr) * sizeof(float),
        "{}: truncated reference logits", path);
  std::vector<float> ref_rows(size_t(kRows * Vr)), ref_cols(size_t(kRows * V)), cand_cols(size_t(kRows * V));
  eval::ParityStats stats;
  each_logit_chunk(model, weights, tokens, [&](int64_t b, int64_t r0, int64_t n, const float* logits) {
    const long offset = long(h.data_offset + size_t((b * tokens.T + r0) * Vr) * sizeof(float));
    check(std::fseek(file.get(), offset, SEEK_SET) == 0 &&
              std::fread(ref_rows.data(), sizeof(float), size_t(n * Vr), file.get()) == size_t(n * Vr),
          "{}: cannot read the reference logits of sequence {}", path, b);
    for (int64_t i = 0; i < n; i++) {
      std::copy_n(ref_rows.begin() + i * Vr, V, ref_cols.begin() + i * V);
      std::copy_n(logits + i * Vc, V, cand_cols.begin() + i * V);
    }
    stats += eval::compare_logits(ref_cols.data(), cand_cols.data(), n, V);
  });
  return stats;
}

}  // namespace replica::reproduce
