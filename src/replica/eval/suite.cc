// Suite specs (YAML, or the default), running the enabled surfaces, and presenting their results.
#include "replica/eval/suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "replica/core/config_fields.h"
#include "replica/core/error.h"
#include "replica/core/glob.h"

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
    const std::vector<std::string> matches = glob_matches(p);
    check(!matches.empty(), "{}: no such token file", p);
    for (const std::string& path : matches) files.push_back({fs::path(path).stem().string(), path});
  }
  std::set<std::string> stems;
  for (const data::MixEntry& f : files) stems.insert(f.label);
  if (stems.size() < files.size())
    for (data::MixEntry& f : files) f.label = fs::path(f.path).parent_path().filename().string();
  return files;
}

std::vector<std::string> paths_of(const std::vector<data::MixEntry>& files) {
  std::vector<std::string> paths;
  for (const data::MixEntry& e : files) paths.push_back(e.path);
  return paths;
}

std::vector<data::MixEntry> section_files(const std::vector<std::string>& patterns, const std::string& where,
                                          const std::string& key) {
  check(!patterns.empty(), "{}: '{}' lists no token files", where, key);
  return labelled_files(patterns);
}

std::vector<TaskSpec> tasks_in_dir(const std::string& tasks_dir) {
  // A directory named on purpose that holds nothing is a typo, not a request to skip every task.
  check(fs::is_directory(tasks_dir),
        "tasks directory {}: not found (expected a directory of <task>.jsonl lm-eval "
        "exports)",
        tasks_dir);
  std::vector<TaskSpec> list;
  for (const std::string& name : task_names()) {
    const fs::path path = fs::path(tasks_dir) / (name + ".jsonl");
    if (!fs::exists(path)) continue;
    TaskSpec t;
    t.name = name;
    t.path = path.string();
    t.fewshot_path = (fs::path(tasks_dir) / (name + "_" + fewshot_split(name) + ".jsonl")).string();
    if (name == "mmlu") t.num_fewshot = 5;
    list.push_back(t);
  }
  check(!list.empty(), "tasks directory {}: no task file in it (expected <task>.jsonl for a task of: {})", tasks_dir,
        fmt::join(task_names(), ", "));
  return list;
}

bool is_builtin_suite(const std::string& name) { return name == "default" || name == "full"; }

SuiteSpec builtin_suite(const std::string& name, const std::string& tasks_dir, const std::string& reference) {
  check(is_builtin_suite(name), "unknown built-in suite '{}' (expected default or full)", name);
  SuiteSpec s;
  const std::vector<std::string> heldout = {"data/tokens/*/heldout.npy"};
  s.heldout.enabled = s.perplexity.enabled = true;
  s.heldout.files = s.perplexity.files = labelled_files(heldout);
  if (!tasks_dir.empty()) s.tasks.list = tasks_in_dir(tasks_dir);
  s.tasks.enabled = !s.tasks.list.empty();
  s.kl.reference = reference;
  s.kl.files = s.heldout.files;
  if (name == "default") {
    s.heldout.max_docs = kDefaultHeldoutDocs;
    s.perplexity.max_docs = kDefaultPerplexityDocs;
    for (TaskSpec& t : s.tasks.list) t.limit = kDefaultTaskDocs;
  }
  return s;
}

void cap_documents(SuiteSpec& spec, int64_t n) {
  check(n > 0, "--max-docs must be positive, got {}", n);
  spec.heldout.max_docs = spec.perplexity.max_docs = n;
  for (TaskSpec& t : spec.tasks.list) t.limit = n;
}

void set_num_fewshot(SuiteSpec& spec, int64_t n) {
  check(n >= 0, "--num-fewshot must be 0 or more, got {}", n);
  for (TaskSpec& t : spec.tasks.list) t.num_fewshot = n;
}

SuiteSpec load_suite(const std::string& path) {
  // `--suite defualt` is far more often a typo of a built-in suite than a suite file that went missing.
  check(std::filesystem::exists(path), "suite '{}': not a built-in suite (default or full){} and no such file", path,
        config::did_you_mean(path, {"default", "full"}));
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    fail("{}: cannot read suite ({})", path, config::yaml_error_text(e));
  }
  SuiteSpec s;
  std::vector<config::Field> sections = {config::integer("batch_tokens", s.batch_tokens, 1)};
  std::vector<std::string> names;
  for (const Surface* surface : surfaces()) {
    names.push_back(surface->name());
    sections.push_back({surface->name(),
                        [&s, surface](const YAML::Node& n, const std::string& where) { surface->parse(n, where, s); },
                        {}});
  }
  check(root.IsMap(), "{}: a suite is a mapping of sections ({})", path, fmt::join(names, ", "));
  config::read_mapping(root, "", sections, path);
  return s;
}

json SuiteResults::to_json() const {
  json out = json::object();
  for (const Entry& e : entries) out[e.surface] = e.result->to_json();
  return out;
}

SuiteResults run_suite(model::Transformer& model, model::WeightSource& weights, const SuiteSpec& spec,
                       const data::Tokenizer& tokenizer, Progress& progress) {
  const SurfaceContext ctx{spec, tokenizer, progress};
  SuiteResults results;
  for (const Surface* surface : surfaces())
    if (surface->enabled(spec)) {
      results.entries.push_back({surface->name(), surface->run(model, weights, ctx)});
      progress.finished(surface->name(), *results.entries.back().result);
    }
  return results;
}

std::string format_results(const SuiteResults& results) {
  std::string s;
  for (const SuiteResults::Entry& e : results.entries) s += e.result->format();
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
