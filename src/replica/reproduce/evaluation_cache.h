// What `replica reproduce` has already computed, under its --out directory, so that a rerun after new checkpoints
// arrive evaluates only those and an interrupted run resumes where it stopped:
//   cache/suite.json                     the suite's fingerprint the entries below were computed with
//   cache/suite-<S>/<C>.json             checkpoint C's suite results under suite S
//   cache/kl-<K>/<R>-<C>.json            KL and the rest of ParityStats of candidate C against reference R on tokens K
//   cache/logits-<K>/<R>.npy             reference R's logits on tokens K, until every pair that needs them is done
// (C, R: 16 hex digits of the checkpoint's content hash; S, K: of the suite's and the tokens' sha256). Each entry is
// written atomically, so a run killed at any point leaves whole entries only. A changed suite is said, not silent:
// its old entries stay where they are and are not used.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "replica/eval/parity.h"
#include "replica/eval/suite.h"

namespace replica::reproduce {

// sha256 over `identity` (the suite YAML's text, or the built-in suite's name and caps), the precision, and the
// XXH3-128 of every file the suite reads (each enabled surface's input_files, in the order of eval::surfaces(): token
// files, task and few-shot exports, haystacks), so that editing a token file invalidates like editing the YAML.
std::string suite_fingerprint(const std::string& identity, const eval::SuiteSpec& spec, const std::string& precision);

class EvaluationCache {
 public:
  // Opens (creating) `out`/cache; `notes` says what changed since the last run (a new suite).
  EvaluationCache(const std::string& out, const std::string& suite_hash, const std::string& tokens_hash);
  const std::vector<std::string>& notes() const { return notes_; }

  std::optional<nlohmann::json> suite_results(const std::string& checkpoint_hash) const;
  void store_suite_results(const std::string& checkpoint_hash, const std::string& path, const nlohmann::json& results);

  std::optional<eval::ParityStats> parity(const std::string& reference_hash, const std::string& candidate_hash) const;
  void store_parity(const std::string& reference_hash, const std::string& candidate_hash, const eval::ParityStats& s);

  std::string logits_path(const std::string& reference_hash) const;

 private:
  std::string suite_dir_, kl_dir_, logits_dir_;
  std::vector<std::string> notes_;
};

}  // namespace replica::reproduce
