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

#include "replica/distributed/memory_plan.h"
#include "replica/reproduce/checkpoint_series.h"
#include "replica/reproduce/pairing.h"
#include "replica/reproduce/run_records.h"
#include "replica/reproduce/verdict.h"
#include "replica/report/report.h"
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
  // --weights: resident (a whole model in memory), streamed (a group at a time from its files), or auto: resident
  // when its planned peak fits in 80 % of --memory-limit (GiB; 0: this machine's memory, or its cgroup's limit).
  std::string weights = "auto";
  double memory_limit_gib = 0;
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
  std::vector<distributed::MemoryItem> peak;  // planned, for the largest model of the two series
  std::string weights;                         // resident or streamed, as resolved, and why
  std::string weights_reason;
  std::vector<PairMeasure> measures;   // one per pair
  SeriesVerdict verdict;
  int64_t evaluated = 0, cached = 0;   // checkpoint evaluations run now / found in the cache
  std::map<std::string, report::Series> reference_train, candidate_train;  // "loss" when the series are runs
  // When both series are replica runs: their training curves compared as `replica report` compares runs, on the
  // steps both logged (report/compare.h), with its default window and ±threshold.
  std::optional<report::Comparison> training;
  report::ReportOptions training_options;
  // Replica runs only (run_records.h): each run's data audit, and its resumes.
  std::optional<DataAuditResult> reference_audit, candidate_audit;
  std::vector<ResumeEvent> reference_resumes, candidate_resumes;
};

// The pairs on either side of a resume at `step`: the last at or before it and the first after (null where none).
std::pair<const PairMeasure*, const PairMeasure*> pairs_around(const Reproduction& r, int64_t step);

// `say` gets the console lines as the work goes (planned peak, each checkpoint evaluated or found cached, each
// pair's numbers).
Reproduction reproduce(const ReproduceOptions& options, const std::function<void(const std::string&)>& say);

// The training curves' comparison in words, as `replica report` states it ("" when the series are not both runs).
std::string training_summary(const Reproduction& r);

// The pair table and verdict as the console prints them at the end.
std::string format_reproduction(const Reproduction& r);

}  // namespace replica::reproduce
