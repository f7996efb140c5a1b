// The reproduction loop: read and pair the series, evaluate what the cache lacks one model at a time, judge.
#include "replica/reproduce/reproduce.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "replica/ckpt/model_source.h"
#include "replica/core/directory_lock.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/parse_number.h"
#include "replica/reproduce/checkpoint_evaluation.h"
#include "replica/reproduce/content_hash.h"
#include "replica/reproduce/evaluation_cache.h"
#include "replica/reproduce/file_hash_cache.h"
#include "replica/reproduce/peak_memory.h"
#include "replica/reproduce/remote_checkpoint.h"
#include "replica/reproduce/surface_values.h"
#include "replica/report/load_run.h"

namespace replica::reproduce {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string gib(double bytes) {
  return bytes < double(1 << 30) ? fmt::format("{:.1f} MiB", bytes / double(1 << 20))
                                 : fmt::format("{:.2f} GiB", bytes / double(1 << 30));
}
std::string where(const SeriesCheckpoint& c) { return c.path.empty() ? c.url : c.path; }

eval::SuiteSpec suite_spec(const ReproduceOptions& o, std::string& identity) {
  std::string tasks_dir = o.tasks_dir;
  if (tasks_dir.empty()) tasks_dir = fs::exists("data/eval") ? "data/eval" : "tests/fixtures/eval";
  eval::SuiteSpec spec;
  if (eval::is_builtin_suite(o.suite)) {
    spec = eval::builtin_suite(o.suite, tasks_dir, "");
    identity = fmt::format("builtin:{} tasks:{}", o.suite, tasks_dir);
  } else {
    spec = eval::load_suite(o.suite);
    identity = read_text_file(o.suite);
  }
  spec.kl.reference.clear();  // the pair's own KL on the KL tokens replaces the suite's KL surface
  if (o.max_docs) {
    eval::cap_documents(spec, *o.max_docs);
    identity += fmt::format(" max_docs:{}", *o.max_docs);
  }
  return spec;
}

// The suite's first held-out (or perplexity, or KL) token file, where the KL tokens are cut from by default.
std::string first_heldout_file(const eval::SuiteSpec& spec, const std::string& suite) {
  for (const auto* files : {&spec.heldout.files, &spec.perplexity.files, &spec.kl.files})
    if (!files->empty()) return files->front().path;
  fail("suite {} has no held-out token file to cut the KL tokens from: pass --tokens", suite);
}

// The candidate's mean training loss over the steps since the previous pair, where its metrics are logged.
std::optional<double> train_loss_since(const report::Series& loss, int64_t after, int64_t upto) {
  double sum = 0.0;
  int64_t n = 0;
  for (const report::Point& p : loss)
    if (p.step > after && p.step <= upto) sum += p.value, n++;
  return n ? std::optional<double>(sum / double(n)) : std::nullopt;
}

// A replica run's metrics.jsonl; none for other series.
std::optional<report::RunHistory> run_history(const CheckpointSeries& s, const std::string& label) {
  if (s.kind != "replica run" || !fs::exists(fs::path(s.source) / "metrics.jsonl")) return std::nullopt;
  return report::load_run(s.source, label);
}

std::map<std::string, report::Series> training_curves(const std::optional<report::RunHistory>& run) {
  if (!run) return {};
  const report::RunHistory& h = *run;
  std::map<std::string, report::Series> out;
  for (const char* metric : {"loss", "lr"})
    if (!h.train_series(metric).empty()) out[metric] = h.train_series(metric);
  if (const auto it = h.heldout.find("all"); it != h.heldout.end()) out["heldout"] = it->second;
  return out;
}

// The memory a resident model may plan to use: --memory-limit, else this machine's (or its cgroup's) memory.
double memory_limit_bytes(const ReproduceOptions& o, std::string& what) {
  if (o.memory_limit_gib > 0) {
    what = fmt::format("--memory-limit {} GiB", o.memory_limit_gib);
    return o.memory_limit_gib * double(1 << 30);
  }
  double bytes = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  what = fmt::format("this machine's {}", gib(bytes));
  // A container's limit (cgroup v2 memory.max: a number, or "max" for none).
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string text;
  if (cgroup >> text)
    if (const std::optional<int64_t> limit = parse_int64(text); limit && double(*limit) < bytes) {
      bytes = double(*limit);
      what = fmt::format("this container's {}", gib(bytes));
    }
  return bytes;
}

WeightsMode choose_weights_mode(const ReproduceOptions& o, const model::ModelConfig& largest, Precision precision,
                                int64_t batch_tokens, std::string& reason) {
  if (o.weights == "resident" || o.weights == "streamed") {
    reason = "--weights " + o.weights;
    return o.weights == "resident" ? WeightsMode::resident : WeightsMode::streamed;
  }
  check(o.weights == "auto", "--weights: '{}' is not auto, resident or streamed", o.weights);
  std::string limit_name;
  const double limit = memory_limit_bytes(o, limit_name);
  const double resident =
      distributed::total_bytes(peak_memory(largest, precision, batch_tokens, WeightsMode::resident));
  const bool fits = resident <= 0.8 * limit;
  reason = fmt::format("a resident model would plan {}, {} 80 % of {}", gib(resident), fits ? "within" : "over",
                       limit_name);
  return fits ? WeightsMode::resident : WeightsMode::streamed;
}

}  // namespace

Reproduction reproduce(const ReproduceOptions& o, const std::function<void(const std::string&)>& say) {
  check(!o.out.empty(), "--out: a directory for the cache and reproduction.html is required");
  Reproduction r;
  r.options = o;
  r.reference = read_series(o.reference, o.stage);
  r.candidate = read_series(o.run, o.stage);
  say(fmt::format("reference: {} ({}, {} checkpoints, steps {}..{})", o.reference, r.reference.kind,
                  r.reference.checkpoints.size(), r.reference.checkpoints.front().step,
                  r.reference.checkpoints.back().step));
  say(fmt::format("candidate: {} ({}, {} checkpoints, steps {}..{})", o.run, r.candidate.kind,
                  r.candidate.checkpoints.size(), r.candidate.checkpoints.front().step,
                  r.candidate.checkpoints.back().step));
  r.pairing = pair_series(r.reference, r.candidate, o.pair_by, o.steps);
  say(fmt::format("pairing {}: {} pairs", r.pairing.rule, r.pairing.pairs.size()));
  for (const SeriesCheckpoint& c : r.pairing.candidate_only)
    say(fmt::format("  candidate {} ({}) has no reference checkpoint: not compared", c.label(), where(c)));
  for (const SeriesCheckpoint& c : r.pairing.reference_only)
    say(fmt::format("  reference {} ({}) has no candidate checkpoint: not compared", c.label(), where(c)));
  check(!r.pairing.pairs.empty(), "{} and {}: no checkpoint pairs ({})", o.reference, o.run, r.pairing.rule);

  // Checkpoints at URLs (CSV rows): fetched into the cache, only those paired.
  const std::string cache_dir = (fs::path(o.out) / "cache").string();
  fs::create_directories(cache_dir);
  // Two reproduces on one --out would take each other's reference logits away (each removes them once its pairs
  // are compared): the second is refused, naming the first's pid.
  const DirectoryLock lock(cache_dir, fmt::format("reproduce --out {}", o.out));
  FileHashCache file_hashes((fs::path(cache_dir) / "file_hashes.json").string());
  for (CheckpointPair& p : r.pairing.pairs)
    for (SeriesCheckpoint* c : {&p.reference, &p.candidate})
      if (!c->url.empty() && c->path.empty()) {
        say(fmt::format("fetching {} {}", c->label(), c->url));
        c->path = fetch_remote_checkpoint(c->url, cache_dir, file_hashes, data::HttpOptions{}, say);
      }

  std::string identity;
  const eval::SuiteSpec spec = suite_spec(o, identity);
  const Precision precision = parse_precision(o.precision.c_str());
  model::ModelConfig largest = ckpt::load_model_source_config(r.pairing.pairs.front().candidate.path);
  for (const CheckpointPair& p : r.pairing.pairs)
    for (const SeriesCheckpoint* c : {&p.reference, &p.candidate}) {
      const model::ModelConfig config = ckpt::load_model_source_config(c->path);
      if (model::ParamTable(config).total() > model::ParamTable(largest).total()) largest = config;
    }
  const KlTokens tokens =
      !o.tokens.empty() ? read_kl_tokens(o.tokens)
                        : cut_kl_tokens(first_heldout_file(spec, o.suite), o.kl_sequences,
                                        std::min(o.kl_length, largest.max_seq_len), largest.vocab_size);
  r.tokens_source = tokens.source, r.tokens_B = tokens.B, r.tokens_T = tokens.T;
  r.suite_hash = suite_fingerprint(identity, spec, o.precision);
  say(fmt::format("KL tokens: {} x {} from {}; suite {} (fingerprint {})", tokens.B, tokens.T, tokens.source, o.suite,
                  short_hash(r.suite_hash)));
  const WeightsMode mode = choose_weights_mode(o, largest, precision, spec.batch_tokens, r.weights_reason);
  r.weights = weights_mode_name(mode);
  r.peak = peak_memory(largest, precision, spec.batch_tokens, mode);
  std::string items;
  for (const distributed::MemoryItem& m : r.peak) items += fmt::format(", {} {}", m.name, gib(m.bytes));
  say(fmt::format("weights {}: {}", r.weights, r.weights_reason));
  say(fmt::format("planned peak: {} (one model at a time{}); reference logits on disk: {}",
                  gib(distributed::total_bytes(r.peak)), items,
                  gib(double(tokens.B * tokens.T) * double(largest.vocab_size) * 4)));

  EvaluationCache cache(o.out, r.suite_hash, tokens.hash);
  for (const std::string& note : cache.notes()) say("NOTE " + note);
  const data::Tokenizer tokenizer =
      data::Tokenizer::load(o.tokenizer.empty() ? data::default_ranks_path() : o.tokenizer);
  Backend& backend = backend_for(parse_device(o.device));

  // Content hashes, once per path.
  std::map<std::string, std::string> hashes;
  auto hash_of = [&](const SeriesCheckpoint& c) -> const std::string& {
    auto it = hashes.find(c.path);
    if (it == hashes.end()) it = hashes.emplace(c.path, checkpoint_content_hash(c.path, &file_hashes)).first;
    return it->second;
  };
  // How many pairs still need each reference's logits (deleted after the last).
  std::map<std::string, int64_t> logits_users;
  for (const CheckpointPair& p : r.pairing.pairs)
    if (!cache.parity(hash_of(p.reference), hash_of(p.candidate))) logits_users[hash_of(p.reference)]++;

  auto run_jobs = [&](const SeriesCheckpoint& c, const std::string& role, const CheckpointJobs& jobs) {
    std::string what = jobs.suite ? "suite" : "";
    if (!jobs.write_logits.empty()) what += what.empty() ? "logits" : " + logits";
    if (!jobs.compare_logits.empty()) what += what.empty() ? "KL" : " + KL";
    say(fmt::format("  evaluating {} {} ({}, {}): {}", role, c.label(), c.path, short_hash(hash_of(c)), what));
    const auto start = std::chrono::steady_clock::now();
    CheckpointOutputs out = evaluate_checkpoint(c.path, jobs, spec, tokenizer, tokens, precision, mode, backend,
                                                eval::no_progress());
    r.evaluated++;
    say(fmt::format("  evaluated {} {} in {:.1f} s", role, c.label(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
    return out;
  };

  const std::optional<report::RunHistory> reference_run = run_history(r.reference, "reference"),
                                          candidate_run = run_history(r.candidate, "candidate");
  r.reference_train = training_curves(reference_run);
  r.candidate_train = training_curves(candidate_run);
  if (reference_run && candidate_run)
    r.training = report::Comparison{
        .exact = report::compare_exact(*candidate_run, *reference_run),
        .distance = report::curve_distance(*candidate_run, *reference_run, r.training_options.window)};
  const report::Series no_loss;
  const report::Series& candidate_loss = r.candidate_train.contains("loss") ? r.candidate_train["loss"] : no_loss;
  int64_t previous_step = -1;
  for (const CheckpointPair& p : r.pairing.pairs) {
    const std::string &ref_hash = hash_of(p.reference), &cand_hash = hash_of(p.candidate);
    std::optional<json> ref_results = cache.suite_results(ref_hash), cand_results = cache.suite_results(cand_hash);
    std::optional<eval::ParityStats> parity = cache.parity(ref_hash, cand_hash);
    const std::string logits = cache.logits_path(ref_hash);
    // The reference first: its suite results and, unless the pair's KL is known, its logits on disk.
    CheckpointJobs ref_jobs{!ref_results, !parity && !fs::exists(logits) ? logits : "", ""};
    if (ref_jobs.suite || !ref_jobs.write_logits.empty()) {
      CheckpointOutputs out = run_jobs(p.reference, "reference", ref_jobs);
      if (out.suite) cache.store_suite_results(ref_hash, p.reference.path, *out.suite), ref_results = out.suite;
    } else {
      r.cached++;
    }
    // Then the candidate, the reference's model freed.
    CheckpointJobs cand_jobs{!cand_results, "", parity ? "" : logits};
    if (cand_jobs.suite || !cand_jobs.compare_logits.empty()) {
      CheckpointOutputs out = run_jobs(p.candidate, "candidate", cand_jobs);
      if (out.suite) cache.store_suite_results(cand_hash, p.candidate.path, *out.suite), cand_results = out.suite;
      if (out.parity) cache.store_parity(ref_hash, cand_hash, *out.parity), parity = out.parity;
      if (out.parity && --logits_users[ref_hash] == 0) fs::remove(logits);
    } else {
      r.cached++;
    }
    PairMeasure m;
    m.step = p.candidate.step;
    m.reference_step = p.reference.step;
    if (p.candidate.tokens) m.tokens = p.candidate.tokens->value;
    m.parity = *parity;
    const std::map<std::string, double> ref_values = surface_values(*ref_results),
                                        cand_values = surface_values(*cand_results);
    for (const auto& [name, value] : cand_values)
      if (const auto it = ref_values.find(name); it != ref_values.end()) m.surfaces.push_back({name, it->second, value});
    m.train_loss = train_loss_since(candidate_loss, previous_step, p.candidate.step);
    previous_step = p.candidate.step;
    say(fmt::format("  step {:>8}: KL mean {:.3e} max {:.3e}, top-1 {:.2f} %, max |dlogit| {:.4g}", m.step,
                    m.parity.kl_mean(), m.parity.kl_max, 100 * m.parity.top1(), m.parity.max_abs_logit_diff));
    r.measures.push_back(std::move(m));
  }
  r.verdict = judge(r.measures, o.bounds);
  r.reference_audit = audit_run_data(r.reference);
  r.candidate_audit = audit_run_data(r.candidate);
  r.reference_resumes = read_resume_events(r.reference);
  r.candidate_resumes = read_resume_events(r.candidate);
  say(fmt::format("content hashes: {} file(s) read to hash them, {} remembered ({})", file_hashes.computed(),
                  file_hashes.reused(), (fs::path(cache_dir) / "file_hashes.json").string()));
  return r;
}

std::pair<const PairMeasure*, const PairMeasure*> pairs_around(const Reproduction& r, int64_t step) {
  const PairMeasure *before = nullptr, *after = nullptr;
  for (const PairMeasure& m : r.measures)
    if (m.step <= step) before = &m;
    else if (!after) after = &m;
  return {before, after};
}

// "data audit (candidate): OK, no instance read twice in 8 steps at W = 2" and the like.
static std::string audit_line(const char* role, const std::optional<DataAuditResult>& a) {
  if (!a) return "";
  if (!a->error.empty()) return fmt::format("data audit ({}): could not run: {}\n", role, a->error);
  return fmt::format("data audit ({}): {} over {} steps at world size {}{}\n", role,
                     a->ok ? "OK, no instance read twice within an epoch"
                           : "ERROR, instances read twice within an epoch",
                     a->steps, a->world_size,
                     a->ok ? "" : fmt::format(" ({:.1f} % of reads)", 100 * a->repeat_fraction));
}

static std::string resume_lines(const Reproduction& r) {
  std::string s;
  for (const ResumeEvent& e : r.candidate_resumes) {
    const auto [before, after] = pairs_around(r, e.step);
    std::string delta;
    if (before && after)
      delta = fmt::format("; KL mean {:.3g} at step {} -> {:.3g} at step {}", before->parity.kl_mean(), before->step,
                          after->parity.kl_mean(), after->step);
    const std::string changes =
        e.changes.empty() ? ", nothing changed" : fmt::format(": {}", fmt::join(e.changes, "; "));
    s += fmt::format("candidate resumed at step {} (world size {} -> {}){}{}\n", e.step, e.saved_world_size,
                     e.world_size, changes, delta);
  }
  return s;
}

std::string training_summary(const Reproduction& r) {
  if (!r.training) return "";
  std::string s = fmt::format("{}; smoothed {}", report::describe_exact(*r.training),
                              report::describe_distance(*r.training));
  if (r.training->distance)
    s += fmt::format(": {} ±{} nat",
                     report::within(*r.training->distance, r.training_options.threshold) ? "WITHIN" : "OUTSIDE",
                     r.training_options.threshold);
  return s;
}

std::string format_reproduction(const Reproduction& r) {
  std::string s = fmt::format("{:>8} {:>8} {:>10} {:>10} {:>8} {:>12}  {:<9} {}\n", "step", "ref", "KL mean", "KL max",
                              "top-1", "Δ held-out", "verdict", "nearest bound (|value| / bound)");
  for (size_t i = 0; i < r.measures.size(); i++) {
    const PairMeasure& m = r.measures[i];
    const PairVerdict& v = r.verdict.pairs[i];
    std::string heldout = "—";
    for (const SurfaceDelta& d : m.surfaces)
      if (d.name == "heldout/loss") heldout = fmt::format("{:+.4f}", d.delta());
    s += fmt::format("{:>8} {:>8} {:>10.3e} {:>10.3e} {:>7.2f}% {:>12}  {:<9} {} {:.2f}\n", m.step, m.reference_step,
                     m.parity.kl_mean(), m.parity.kl_max, 100 * m.parity.top1(), heldout, verdict_name(v.verdict),
                     v.nearest, v.bound_use);
  }
  s += fmt::format("verdict: {}\n", r.verdict.summary());
  if (r.training) s += fmt::format("training curves: {}\n", training_summary(r));
  if (r.verdict.diverged_at)
    for (size_t i = 0; i < r.measures.size(); i++)
      if (r.verdict.pairs[i].verdict == Verdict::diverged) {
        for (const Crossing& c : r.verdict.pairs[i].crossed)
          s += fmt::format("  step {}: {} {:.4g} > bound {:.4g}\n", r.measures[i].step, c.name, c.value, c.bound);
        break;
      }
  if (r.verdict.memorisation_alarm)
    s += fmt::format("WARNING memorisation alarm: from step {} to {} the candidate's training loss fell while its "
                     "held-out loss fell behind the reference's at every pair\n",
                     r.verdict.memorisation_alarm->from_step, r.verdict.memorisation_alarm->step);
  s += audit_line("reference", r.reference_audit) + audit_line("candidate", r.candidate_audit) + resume_lines(r);
  s += fmt::format("{} checkpoint evaluation(s) run, {} found in the cache\n", r.evaluated, r.cached);
  return s;
}

}  // namespace replica::reproduce
