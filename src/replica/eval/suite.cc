// Suite specs (YAML), running the four surfaces, and presenting the results.
#include "replica/eval/suite.h"

#include <fmt/format.h>
#include <glob.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "replica/core/error.h"
#include "replica/eval/downstream.h"
#include "replica/eval/heldout.h"
#include "replica/eval/kl.h"
#include "replica/ckpt/model_source.h"
#include "replica/eval/perplexity.h"

namespace replica::eval {
namespace fs = std::filesystem;
using nlohmann::json;

std::vector<data::MixEntry> labelled_files(const std::vector<std::string>& patterns) {
  std::vector<data::MixEntry> files;
  for (const std::string& p : patterns) {
    if (p.ends_with(".mix")) {
      for (data::MixEntry& e : data::read_mix_file(p)) files.push_back(std::move(e));
      continue;
    }
    glob_t g;
    const int rc = glob(p.c_str(), 0, nullptr, &g);
    check(rc == 0, "{}: no such token file", p);
    for (size_t i = 0; i < g.gl_pathc; i++) files.push_back({fs::path(g.gl_pathv[i]).stem().string(), g.gl_pathv[i]});
    globfree(&g);
  }
  std::set<std::string> stems;
  for (const data::MixEntry& f : files) stems.insert(f.label);
  if (stems.size() < files.size())
    for (data::MixEntry& f : files) f.label = fs::path(f.path).parent_path().filename().string();
  return files;
}

std::vector<TaskSpec> tasks_in_dir(const std::string& tasks_dir) {
  std::vector<TaskSpec> list;
  for (const std::string& name : task_names()) {
    const fs::path path = fs::path(tasks_dir) / (name + ".jsonl");
    if (!fs::exists(path)) continue;
    TaskSpec t;
    t.name = name;
    t.path = path.string();
    if (name == "mmlu") {
      t.fewshot_path = (fs::path(tasks_dir) / "mmlu_dev.jsonl").string();
      t.num_fewshot = 5;
    }
    list.push_back(t);
  }
  return list;
}

SuiteSpec default_suite(const std::string& tasks_dir, const std::string& reference) {
  SuiteSpec s;
  const std::vector<std::string> heldout = {"data/tokens/*/heldout.npy"};
  s.heldout.enabled = s.perplexity.enabled = true;
  s.heldout.files = s.perplexity.files = labelled_files(heldout);
  s.tasks.list = tasks_in_dir(tasks_dir);
  s.tasks.enabled = !s.tasks.list.empty();
  s.kl.reference = reference;
  s.kl.files = s.heldout.files;
  return s;
}

namespace {

// Reads one mapping's keys, refusing unknown ones.
struct Keys {
  const YAML::Node& node;
  std::string where;
  std::vector<std::string> known;

  template <typename T>
  void get(const std::string& key, T& out) {
    known.push_back(key);
    if (!node[key]) return;
    try {
      out = node[key].as<T>();
    } catch (const YAML::Exception&) {
      fail("{}: '{}' has the wrong type ({})", where, key, YAML::Dump(node[key]));
    }
  }
  void done() {
    for (const auto& kv : node) {
      const std::string k = kv.first.as<std::string>();
      check(std::find(known.begin(), known.end(), k) != known.end(), "{}: unknown key '{}' (expected one of {})", where,
            k, fmt::join(known, ", "));
    }
  }
};

std::vector<data::MixEntry> files_of(Keys& k) {
  std::vector<std::string> patterns;
  k.get("files", patterns);
  check(!patterns.empty(), "{}: 'files' lists no token files", k.where);
  return labelled_files(patterns);
}

json parity_json(const ParityStats& s) { return s.to_json(); }

}  // namespace

SuiteSpec load_suite(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    fail("{}: cannot read suite ({})", path, e.what());
  }
  check(root.IsMap(), "{}: a suite is a mapping of sections (heldout, perplexity, tasks, kl)", path);
  SuiteSpec s;
  Keys top{root, path, {"heldout", "perplexity", "tasks", "kl"}};
  top.get("batch_tokens", s.batch_tokens);
  top.done();
  if (const YAML::Node n = root["heldout"]) {
    Keys k{n, path + ": heldout", {}};
    s.heldout.enabled = true;
    s.heldout.files = files_of(k);
    k.get("seq_len", s.heldout.seq_len);
    k.get("max_docs", s.heldout.max_docs);
    k.done();
  }
  if (const YAML::Node n = root["perplexity"]) {
    Keys k{n, path + ": perplexity", {}};
    s.perplexity.enabled = true;
    s.perplexity.files = files_of(k);
    k.get("window", s.perplexity.window);
    k.get("max_docs", s.perplexity.max_docs);
    k.done();
    check(s.perplexity.window >= 1, "{}: perplexity.window must be >= 1", path);
  }
  if (const YAML::Node n = root["tasks"]) {
    Keys k{n, path + ": tasks", {}};
    std::string format = "lm-eval", dir;
    int64_t limit = 0;
    k.get("format", format);
    k.get("max_length", s.tasks.max_length);
    k.get("limit", limit);
    k.get("dir", dir);
    k.known.push_back("list");
    k.done();
    s.tasks.format = parse_task_format(format);
    if (!dir.empty()) s.tasks.list = tasks_in_dir(dir);
    if (const YAML::Node list = n["list"]) {
      check(list.IsSequence(), "{}: tasks.list must be a list of {{name, path, ...}}", path);
      for (const YAML::Node& item : list) {
        Keys t{item, path + ": tasks.list", {}};
        TaskSpec spec;
        t.get("name", spec.name);
        t.get("path", spec.path);
        t.get("fewshot", spec.fewshot_path);
        t.get("num_fewshot", spec.num_fewshot);
        t.get("limit", spec.limit);
        t.done();
        check(!spec.name.empty() && !spec.path.empty(), "{}: every tasks.list entry needs a name and a path", path);
        s.tasks.list.push_back(spec);
      }
    }
    for (TaskSpec& t : s.tasks.list)
      if (t.limit == 0) t.limit = limit;
    s.tasks.enabled = !s.tasks.list.empty();
  }
  if (const YAML::Node n = root["kl"]) {
    Keys k{n, path + ": kl", {}};
    k.get("reference", s.kl.reference);
    s.kl.files = files_of(k);
    k.get("window", s.kl.window);
    k.get("max_positions", s.kl.max_positions);
    k.done();
    check(!s.kl.reference.empty(), "{}: kl.reference names no model", path);
  }
  return s;
}

json run_suite(Olmo3& model, WeightSource& weights, const SuiteSpec& spec, const data::Tokenizer& tokenizer,
               const std::function<void(const std::string&)>& log) {
  const ModelConfig& c = model.config();
  json out = json::object();
  if (spec.heldout.enabled) {
    const int64_t T = spec.heldout.seq_len > 0 ? std::min(spec.heldout.seq_len, c.max_seq_len) : c.max_seq_len;
    const int64_t micro = std::max<int64_t>(1, spec.batch_tokens / T);
    data::FslDataset set(spec.heldout.files, T, data::TokenDtype::u32, uint32_t(c.vocab_size));
    const HeldoutResult h = heldout_loss(model, weights, set, micro, spec.heldout.max_docs);
    json files = json::object();
    for (const HeldoutFile& f : h.files)
      files[f.label] = {{"loss", f.loss},   {"nll", f.nll},   {"tokens", f.tokens},
                        {"docs", f.docs},   {"olmo_ce", f.doc_tokens ? f.nll / double(f.doc_tokens) : 0.0}};
    out["heldout"] = {{"loss", h.loss}, {"tokens", h.tokens}, {"seq_len", T}, {"files", files}};
    log(fmt::format("held-out loss {:.4f} over {} tokens", h.loss, h.tokens));
  }
  if (spec.perplexity.enabled) {
    const PerplexityResult p = domain_perplexity(model, weights, tokenizer, spec.perplexity.files, spec.perplexity.window,
                                                 spec.perplexity.max_docs, spec.batch_tokens);
    json domains = json::object();
    for (const DomainPerplexity& d : p.domains)
      domains[d.label] = {{"ppl", d.ppl()},       {"bits_per_byte", d.bits_per_byte()}, {"nll", d.nll},
                          {"tokens", d.tokens},   {"bytes", d.bytes},                   {"docs", d.docs}};
    out["perplexity"] = {{"window", p.window},
                         {"macro_ppl", p.macro_ppl()},
                         {"macro_bits_per_byte", p.macro_bits_per_byte()},
                         {"domains", domains}};
    log(fmt::format("perplexity: macro {:.2f}, {:.4f} bits/byte", p.macro_ppl(), p.macro_bits_per_byte()));
  }
  if (spec.tasks.enabled) {
    json tasks = {{"format", task_format_name(spec.tasks.format)}};
    for (const TaskSpec& t : spec.tasks.list) {
      const TaskResult r =
          evaluate_task(model, weights, tokenizer, load_task(t, spec.tasks.format), spec.tasks.max_length, spec.batch_tokens);
      json j = {{"docs", r.docs}, {"requests", r.requests}, {"forwards", r.forwards}, {"path", t.path}};
      for (const MetricValue& m : r.metrics) {
        j[m.name] = m.value;
        j[m.name + "_stderr"] = m.stderr;
      }
      tasks[t.name] = j;
      log(fmt::format("task {}: acc {:.4f} over {} docs", t.name, r.metrics[0].value, r.docs));
    }
    out["tasks"] = tasks;
  }
  if (!spec.kl.reference.empty()) {
    HfModel ref = load_model_source(spec.kl.reference);
    Olmo3 reference(ref.config, model.precision(), Remat::none, model.backend());
    const OnBackend ref_params(model.backend(), ref.params);
    json domains = json::object();
    ParityStats all;
    for (const DomainKl& d : domain_kl(reference, reference.whole_weights(ref_params.data()), model, weights,
                                        spec.kl.files, spec.kl.window, spec.kl.max_positions)) {
      domains[d.label] = parity_json(d.stats);
      all += d.stats;
    }
    out["kl"] = {{"reference", spec.kl.reference}, {"all", parity_json(all)}, {"domains", domains}};
    log(fmt::format("KL(reference || model) mean {:.4g}, top-1 agreement {:.4f}", all.kl_mean(), all.top1()));
  }
  return out;
}

std::string format_results(const json& r) {
  std::string s;
  if (r.contains("heldout")) {
    const json& h = r["heldout"];
    s += fmt::format("held-out loss (documents truncated to {} tokens, mean CE per predicted token)\n",
                     h["seq_len"].get<int64_t>());
    for (const auto& [label, f] : h["files"].items())
      s += fmt::format("  {:<16} {:8.4f}  ({} docs, {} tokens)\n", label, f["loss"].get<double>(),
                       f["docs"].get<int64_t>(), f["tokens"].get<int64_t>());
    s += fmt::format("  {:<16} {:8.4f}  ({} tokens)\n", "all", h["loss"].get<double>(), h["tokens"].get<int64_t>());
  }
  if (r.contains("perplexity")) {
    const json& p = r["perplexity"];
    s += fmt::format("domain perplexity (Paloma rolling windows of {} tokens)\n", p["window"].get<int64_t>());
    s += fmt::format("  {:<16} {:>10} {:>10} {:>10}\n", "domain", "ppl", "bits/byte", "tokens");
    for (const auto& [label, d] : p["domains"].items())
      s += fmt::format("  {:<16} {:10.3f} {:10.4f} {:10}\n", label, d["ppl"].get<double>(),
                       d["bits_per_byte"].get<double>(), d["tokens"].get<int64_t>());
    s += fmt::format("  {:<16} {:10.3f} {:10.4f}\n", "macro average", p["macro_ppl"].get<double>(),
                     p["macro_bits_per_byte"].get<double>());
  }
  if (r.contains("tasks")) {
    const json& t = r["tasks"];
    s += fmt::format("downstream tasks ({} format)\n", t["format"].get<std::string>());
    s += fmt::format("  {:<14} {:>6} {:<9} {:>8}   {:>8}\n", "task", "docs", "metric", "value", "stderr");
    for (const auto& [name, v] : t.items()) {
      if (name == "format") continue;
      for (const char* m : {"acc", "acc_norm", "len_norm", "bpb"})
        if (v.contains(m))
          s += fmt::format("  {:<14} {:>6} {:<9} {:8.4f} ± {:8.4f}\n", name, v["docs"].get<int64_t>(), m,
                           v[m].get<double>(), v[std::string(m) + "_stderr"].get<double>());
    }
  }
  if (r.contains("kl")) {
    const json& k = r["kl"];
    s += fmt::format("KL(reference || model) vs {}\n", k["reference"].get<std::string>());
    s += fmt::format("  {:<16} {:>10} {:>10} {:>8} {:>9}\n", "domain", "kl_mean", "kl_max", "top1", "positions");
    auto row = [&](const std::string& label, const json& d) {
      s += fmt::format("  {:<16} {:10.4g} {:10.4g} {:8.4f} {:9}\n", label, d["kl_mean"].get<double>(),
                       d["kl_max"].get<double>(), d["top1"].get<double>(), d["positions"].get<int64_t>());
    };
    for (const auto& [label, d] : k["domains"].items()) row(label, d);
    row("all", k["all"]);
  }
  return s;
}

std::vector<std::pair<std::string, double>> flat_scalars(const json& results) {
  std::vector<std::pair<std::string, double>> out;
  std::function<void(const json&, const std::string&)> walk = [&](const json& j, const std::string& path) {
    if (j.is_number()) out.push_back({path, j.get<double>()});
    if (j.is_object())
      for (const auto& [k, v] : j.items()) walk(v, path + "/" + k);
  };
  walk(results, "eval");
  return out;
}

}  // namespace replica::eval
