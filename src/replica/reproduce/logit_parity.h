// The logit half of a pair's comparison with one model in memory at a time: the reference's logits over the KL
// tokens are streamed to a .npy [B, T, V] on disk (float32, the file `replica parity` reads as a reference), then the
// candidate's logits are compared with it row by row (eval/parity.h: KL(reference ‖ candidate), top-1, max |Δlogit|)
// over the smaller of the two vocabularies.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/eval/parity.h"
#include "replica/model/transformer.h"

namespace replica::reproduce {

// Token ids [B, T] the logits are compared on, and what they are.
struct KlTokens {
  std::vector<int32_t> ids;
  int64_t B = 0, T = 0;
  std::string source;  // the .npy, or the held-out file they were cut from
  std::string hash;    // sha256 of the shape and the int32 ids
};

// A .npy of ids [B, T] or [T] (int32, int64, uint16 or uint32); replica::Error names the file on a bad shape or id.
KlTokens read_kl_tokens(const std::string& path);
// At most `rows` sequences of `T` consecutive tokens from the start of a token file (a held-out file of the suite;
// headerless files are uint32), every id below `vocab`.
KlTokens cut_kl_tokens(const std::string& token_file, int64_t rows, int64_t T, int64_t vocab);

// Streams `model`'s logits [B, T, V] (V its vocabulary) to `path` (atomically: a temp name, then renamed).
void write_reference_logits(model::Transformer& model, model::WeightSource& weights, const KlTokens& tokens,
                            const std::string& path);

// Compares `model`'s logits with the reference logits at `path` (written by write_reference_logits for `tokens`).
eval::ParityStats compare_with_reference_logits(model::Transformer& model, model::WeightSource& weights,
                                                const KlTokens& tokens, const std::string& path);

}  // namespace replica::reproduce
