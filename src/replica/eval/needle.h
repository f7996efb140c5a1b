// Needle-in-a-haystack retrieval in RULER's single-needle form, scored by likelihood: a sentence "The special
// magic number for <key> is <value>." is hidden at a depth of held-out haystack text, the question about <key>
// follows, and the needle's value is ranked by log-likelihood among distractor values (docs/evaluation.md).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/data/tokenizer.h"
#include "replica/eval/progress.h"
#include "replica/model/transformer.h"

namespace replica::eval {

// The task's settings (the suite's `needle` section).
// Values are the 7-digit numbers [1000000, 9999999]: the needle's and its distractors are distinct draws among them.
inline constexpr int64_t kNeedleValues = 9000000;

struct NeedleTask {
  std::vector<int64_t> lengths;  // tokens per scored sequence; empty = the model's max_position_embeddings
  // The needle's place, as a fraction of the haystack.
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t trials = 4;       // keys, values and haystacks per (length, depth)
  int64_t distractors = 9;  // wrong values ranked against the needle's
  int64_t seed = 1234;      // random.Random seed of the keys and values
  // Score lengths beyond the model's max_position_embeddings too: the model runs unchanged with more positions, its
  // RoPE (plain, or YaRN on the full-attention layers) continued past the context it was trained on.
  bool extrapolate = false;
};

// One trial at one (length, depth): context + values[i] is exactly `length` tokens for every candidate i.
struct NeedleCase {
  int64_t length = 0;
  double depth = 0.0;
  int64_t trial = 0;
  std::string key;
  int64_t needle_at = 0;                     // token position of the needle sentence in `context`
  int64_t haystack = 0;                      // haystack tokens around the needle
  std::vector<int32_t> context;              // haystack with the needle inside, then the question
  std::vector<std::vector<int32_t>> values;  // continuation tokens; values[0] is the needle's, then distractors
};

// Every case, length-major, then depth, then trial. Trial t has the same key and values at every length and
// depth, and its haystack is `haystack` from token t × max(lengths) on (cyclically). Raises Error naming
// needle.lengths for a length too short to hold the needle and the question.
std::vector<NeedleCase> needle_cases(const NeedleTask& task, std::span<const int32_t> haystack,
                                     const data::Tokenizer& tokenizer);

// The first `count` tokens of `files` (in order, each checked against `vocab_size`) with every `eos` dropped:
// documents run on as one text. Fewer when the files hold fewer.
std::vector<int32_t> haystack_tokens(const std::vector<data::MixEntry>& files, uint32_t eos, uint32_t vocab_size,
                                     uint64_t count);

// Accuracy and rank over one (length, depth)'s trials.
struct NeedleCell {
  int64_t length = 0;
  double depth = 0.0;
  int64_t trials = 0;
  double accuracy = 0.0;   // the needle's value ranked first
  double mean_rank = 0.0;  // 1 + distractors scoring at least as high as the needle's value (ties count against)
};

// Scores `cases` grouped by (length, depth), in their order; `batch_tokens` padded tokens per forward. `progress`
// sees every case as one pass.
std::vector<NeedleCell> score_needle(model::Transformer& model, model::WeightSource& weights,
                                     const std::vector<NeedleCase>& cases, int64_t batch_tokens, Progress& progress);

}  // namespace replica::eval
