// Building the needle-in-a-haystack cases and ranking the needle's value among distractors.
#include "replica/eval/needle.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "replica/core/error.h"
#include "replica/core/python_random.h"
#include "replica/data/token_file.h"
#include "replica/eval/score.h"

namespace replica::eval {
namespace {

// Keys are adjective-noun pairs, as RULER's "words" keys; values are 7-digit numbers, as its "numbers" values.
constexpr std::array<std::string_view, 16> kAdjectives = {"ancient", "bitter", "brave",  "calm",   "clever", "dusty",
                                                          "eager",   "fancy",  "gentle", "hollow", "jolly",  "lucky",
                                                          "quiet",   "rapid",  "silent", "tidy"};
constexpr std::array<std::string_view, 16> kNouns = {"anchor", "badger",  "canyon", "falcon", "garden", "harbor",
                                                     "island", "lantern", "meadow", "orchid", "pepper", "quartz",
                                                     "river",  "saddle",  "tunnel", "violin"};
constexpr uint64_t kValueBase = 1000000, kValueRange = uint64_t(kNeedleValues);

// A trial's key and values (values[0] the needle's), drawn in trial order from one random.Random.
struct TrialDraw {
  std::string key;
  std::vector<int64_t> values;
};

std::vector<TrialDraw> draw_trials(const NeedleTask& task) {
  PythonRandom rng(task.seed);
  std::vector<TrialDraw> trials(size_t(task.trials));
  for (TrialDraw& t : trials) {
    const std::string_view adjective = kAdjectives[rng.randbelow(kAdjectives.size())];
    t.key = fmt::format("{}-{}", adjective, kNouns[rng.randbelow(kNouns.size())]);
    for (size_t v : rng.sample(kValueRange, size_t(task.distractors) + 1)) t.values.push_back(int64_t(kValueBase + v));
  }
  return trials;
}

}  // namespace

std::vector<NeedleCase> needle_cases(const NeedleTask& task, std::span<const int32_t> haystack,
                                     const data::Tokenizer& tokenizer) {
  check(!haystack.empty(), "needle.files: no haystack tokens (every file is empty or end-of-text only)");
  const int64_t longest = *std::max_element(task.lengths.begin(), task.lengths.end());
  std::vector<NeedleCase> cases;
  const std::vector<TrialDraw> trials = draw_trials(task);
  for (int64_t length : task.lengths)
    for (double depth : task.depths)
      for (size_t t = 0; t < trials.size(); t++) {
        const TrialDraw& draw = trials[t];
        NeedleCase c{length, depth, int64_t(t), draw.key, 0, 0, {}, {}};
        for (int64_t v : draw.values) c.values.push_back(tokenizer.encode_model_input(fmt::format(" {}", v)));
        for (const std::vector<int32_t>& v : c.values)
          check(v.size() == c.values[0].size(), "needle: the tokenizer splits 7-digit values unevenly");
        const std::vector<int32_t> needle = tokenizer.encode_model_input(
            fmt::format(" The special magic number for {} is {}.", draw.key, draw.values[0]));
        const std::vector<int32_t> question = tokenizer.encode_model_input(
            fmt::format("\nWhat is the special magic number for {0}? The special magic number for {0} is", draw.key));
        const int64_t fixed = int64_t(needle.size() + question.size() + c.values[0].size());
        check(length > fixed, "needle.lengths: {} tokens cannot hold the needle, question and value ({} tokens)",
              length, fixed);
        c.haystack = length - fixed;
        c.needle_at = std::llround(depth * double(c.haystack));
        const uint64_t start = uint64_t(t) * uint64_t(longest);
        for (int64_t i = 0; i < c.haystack; i++) {
          if (i == c.needle_at) c.context.insert(c.context.end(), needle.begin(), needle.end());
          c.context.push_back(haystack[(start + uint64_t(i)) % haystack.size()]);
        }
        if (c.needle_at == c.haystack) c.context.insert(c.context.end(), needle.begin(), needle.end());
        c.context.insert(c.context.end(), question.begin(), question.end());
        cases.push_back(std::move(c));
      }
  return cases;
}

std::vector<int32_t> haystack_tokens(const std::vector<data::MixEntry>& files, uint32_t eos, uint32_t vocab_size,
                                     uint64_t count) {
  std::vector<int32_t> out;
  std::vector<int32_t> block;
  for (const data::MixEntry& f : files) {
    const data::TokenFile file(f.path, data::TokenDtype::u32);
    for (uint64_t pos = 0; pos < file.num_tokens() && out.size() < count;) {
      block.resize(std::min<uint64_t>(file.num_tokens() - pos, 1 << 16));
      file.read(pos, block.size(), block.data(), vocab_size);
      pos += block.size();
      for (int32_t id : block)
        if (uint32_t(id) != eos && out.size() < count) out.push_back(id);
    }
  }
  return out;
}

std::vector<NeedleCell> score_needle(model::Transformer& model, model::WeightSource& weights,
                                     const std::vector<NeedleCase>& cases, int64_t batch_tokens, Progress& progress) {
  int64_t total = 0;
  for (const NeedleCase& c : cases)
    for (const std::vector<int32_t>& value : c.values) total += int64_t(c.context.size() + value.size());
  progress.start(fmt::format("needle ({} cases)", cases.size()), total);
  std::vector<NeedleCell> cells;
  for (size_t begin = 0; begin < cases.size();) {
    size_t end = begin;
    while (end < cases.size() && cases[end].length == cases[begin].length && cases[end].depth == cases[begin].depth)
      end++;
    std::vector<Sequence> seqs;
    for (size_t i = begin; i < end; i++)
      for (const std::vector<int32_t>& value : cases[i].values) {
        Sequence s{cases[i].context, {{int64_t(cases[i].context.size()) - 1, value}}};
        s.ids.insert(s.ids.end(), value.begin(), value.end());
        seqs.push_back(std::move(s));
      }
    const std::vector<SpanScore> scores = score_sequences(model, weights, seqs, batch_tokens, progress);
    NeedleCell cell{cases[begin].length, cases[begin].depth, int64_t(end - begin), 0.0, 0.0};
    size_t k = 0;
    for (size_t i = begin; i < end; i++) {
      const double needle = scores[k].logprob;
      int64_t rank = 1;
      for (size_t d = 1; d < cases[i].values.size(); d++) rank += scores[k + d].logprob >= needle;
      k += cases[i].values.size();
      cell.accuracy += rank == 1;
      cell.mean_rank += double(rank);
    }
    cell.accuracy /= double(cell.trials);
    cell.mean_rank /= double(cell.trials);
    cells.push_back(cell);
    begin = end;
  }
  return cells;
}

}  // namespace replica::eval
