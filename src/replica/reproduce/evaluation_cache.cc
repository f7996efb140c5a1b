// The evaluation cache's files (evaluation_cache.h).
#include "replica/reproduce/evaluation_cache.h"

#include <filesystem>

#include "replica/ckpt/manifest.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/sha256.h"
#include "replica/eval/surface.h"
#include "replica/reproduce/content_hash.h"

namespace replica::reproduce {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<json> read_entry(const fs::path& path) {
  if (!fs::exists(path)) return std::nullopt;
  json j = json::parse(read_text_file(path.string()), nullptr, false);
  check(!j.is_discarded(), "{}: a malformed cache entry (delete it to evaluate again)", path.string());
  return j;
}

json parity_to_json(const eval::ParityStats& s) {
  return {{"positions", s.positions},   {"kl_sum", s.kl_sum},
          {"kl_max", s.kl_max},         {"top1_agree", s.top1_agree},
          {"top10_overlap_sum", s.top10_overlap_sum}, {"max_abs_logit_diff", s.max_abs_logit_diff}};
}

eval::ParityStats parity_from_json(const json& j, const std::string& where) {
  try {
    eval::ParityStats s;
    s.positions = j.at("positions").get<int64_t>();
    s.kl_sum = j.at("kl_sum").get<double>();
    s.kl_max = j.at("kl_max").get<double>();
    s.top1_agree = j.at("top1_agree").get<int64_t>();
    s.top10_overlap_sum = j.at("top10_overlap_sum").get<double>();
    s.max_abs_logit_diff = j.at("max_abs_logit_diff").get<double>();
    return s;
  } catch (const json::exception& e) {
    fail("{}: a malformed cache entry ({}; delete it to evaluate again)", where, e.what());
  }
}

}  // namespace

std::string suite_fingerprint(const std::string& identity, const eval::SuiteSpec& spec, const std::string& precision) {
  json files = json::array();
  auto add = [&](const std::string& path) {
    if (!path.empty() && fs::exists(path)) files.push_back({path, ckpt::digest_file(path).xxh3_128});
  };
  for (const eval::Surface* surface : eval::surfaces())
    if (surface->enabled(spec))
      for (const std::string& path : surface->input_files(spec)) add(path);
  const std::string text = json{{"suite", identity}, {"precision", precision}, {"files", files}}.dump();
  return sha256_hex(text.data(), text.size());
}

EvaluationCache::EvaluationCache(const std::string& out, const std::string& suite_hash, const std::string& tokens_hash) {
  const fs::path root = fs::path(out) / "cache";
  suite_dir_ = (root / ("suite-" + short_hash(suite_hash))).string();
  kl_dir_ = (root / ("kl-" + short_hash(tokens_hash))).string();
  logits_dir_ = (root / ("logits-" + short_hash(tokens_hash))).string();
  for (const std::string& d : {suite_dir_, kl_dir_, logits_dir_}) fs::create_directories(d);
  const fs::path marker = root / "suite.json";
  if (const std::optional<json> previous = read_entry(marker)) {
    const std::string before = previous->value("suite", "");
    if (before != suite_hash) {
      const fs::path old_dir = root / ("suite-" + short_hash(before));
      int64_t n = 0;
      if (fs::is_directory(old_dir))
        for (const fs::directory_entry& e : fs::directory_iterator(old_dir)) n += e.path().extension() == ".json";
      notes_.push_back(fmt::format("the suite changed (fingerprint {} -> {}): the {} checkpoint evaluation(s) cached "
                                   "under the old suite ({}) are not used; every checkpoint is evaluated again",
                                   short_hash(before), short_hash(suite_hash), n, old_dir.string()));
    }
  }
  write_text_file_atomic(marker.string(), json{{"suite", suite_hash}}.dump() + "\n");
}

std::optional<json> EvaluationCache::suite_results(const std::string& checkpoint_hash) const {
  const std::optional<json> j = read_entry(fs::path(suite_dir_) / (short_hash(checkpoint_hash) + ".json"));
  if (!j) return std::nullopt;
  check(j->value("checkpoint", "") == checkpoint_hash && j->contains("results"),
        "{}/{}.json: a cache entry of another checkpoint (delete it)", suite_dir_, short_hash(checkpoint_hash));
  return j->at("results");
}

void EvaluationCache::store_suite_results(const std::string& checkpoint_hash, const std::string& path,
                                          const json& results) {
  write_text_file_atomic((fs::path(suite_dir_) / (short_hash(checkpoint_hash) + ".json")).string(),
                         json{{"checkpoint", checkpoint_hash}, {"path", path}, {"results", results}}.dump() + "\n");
}

std::optional<eval::ParityStats> EvaluationCache::parity(const std::string& reference_hash,
                                                         const std::string& candidate_hash) const {
  const fs::path path = fs::path(kl_dir_) / (short_hash(reference_hash) + "-" + short_hash(candidate_hash) + ".json");
  const std::optional<json> j = read_entry(path);
  if (!j) return std::nullopt;
  return parity_from_json(j->value("parity", json::object()), path.string());
}

void EvaluationCache::store_parity(const std::string& reference_hash, const std::string& candidate_hash,
                                   const eval::ParityStats& s) {
  const fs::path path = fs::path(kl_dir_) / (short_hash(reference_hash) + "-" + short_hash(candidate_hash) + ".json");
  write_text_file_atomic(path.string(), json{{"reference", reference_hash}, {"candidate", candidate_hash},
                                             {"parity", parity_to_json(s)}}.dump() + "\n");
}

std::string EvaluationCache::logits_path(const std::string& reference_hash) const {
  return (fs::path(logits_dir_) / (short_hash(reference_hash) + ".npy")).string();
}

}  // namespace replica::reproduce
