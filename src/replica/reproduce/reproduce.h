// `replica reproduce`: a candidate checkpoint series held against a reference series pair by pair (pairing.h), each
// pair's logits compared (KL, top-1, max |Δlogit| on the KL tokens) and the suite's surfaces run on both, with the
// verdict of verdict.h. Every checkpoint's results are cached under the --out directory (evaluation_cache.h), and at
// most one model is in memory at a time (checkpoint_evaluation.h). docs/reproduce.md is the user's guide.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "replica/dist/memory_plan.h"
#include "replica/reproduce/checkpoint_series.h"
#include "replica/reproduce/pairing.h"
#include "replica/reproduce/verdict.h"
#include "replica/report/series.h"

namespace replica::reproduce {

struct ReproduceOptions {
  std::string run, reference;   // the candidate and reference series
  std::string tokens;           // KL token ids .npy; empty: cut from the suite's first held-out file
  int64_t kl_sequences = 4, kl_length = 256;  // of the tokens cut from the held-out file (capped at the context)
  std::string suite = "default", tasks_dir, tokenizer;
  std::optional<int64_t> max_docs;
  std::string out;              // the cache and reproduction.html; required
  std::string stage;            // --stage: the series' stage, where they span several
  std::string precision = "fp32", device = "cpu";
  PairBy pair_by = PairBy::automatic;
  std::vector<int64_t> steps;   // --steps: only these candidate steps
  Bounds bounds;
};

// What the run found, for the console, the JSON and the page.
struct Reproduction {
  ReproduceOptions options;
  CheckpointSeries reference, candidate;
  Pairing pairing;
  std::string tokens_source, suite_hash;
  int64_t tokens_B = 0, tokens_T = 0;
  std::vector<dist::MemoryItem> peak;  // planned, for the largest model of the two series
  std::vector<PairMeasure> measures;   // one per pair
  SeriesVerdict verdict;
  int64_t evaluated = 0, cached = 0;   // checkpoint evaluations run now / found in the cache
  std::map<std::string, report::Series> reference_train, candidate_train;  // "loss" when the series are runs
};

// `say` gets the console lines as the work goes (planned peak, each checkpoint evaluated or found cached, each
// pair's numbers).
Reproduction reproduce(const ReproduceOptions& options, const std::function<void(const std::string&)>& say);

// The pair table and verdict as the console prints them at the end.
std::string format_reproduction(const Reproduction& r);

}  // namespace replica::reproduce
