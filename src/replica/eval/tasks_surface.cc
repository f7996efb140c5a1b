// The downstream tasks surface (eval/tasks.h, eval/task_scoring.h): multiple-choice accuracy per task.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "replica/core/config_fields.h"
#include "replica/eval/task_scoring.h"
#include "replica/eval/suite.h"

namespace replica::eval {
namespace {

// The toy task files the tests use, which the default suite falls back to when data/eval is absent.
bool is_test_fixture(const std::string& path) { return path.find("tests/fixtures/eval/") != std::string::npos; }

struct ScoredTask {
  TaskSpec spec;
  TaskResult result;
};

struct TasksSurfaceResult final : SurfaceResult {
  TaskFormat format_used = TaskFormat::lm_eval;
  std::vector<ScoredTask> tasks;

  nlohmann::json to_json() const override {
    nlohmann::json out = {{"format", task_format_name(format_used)}};
    for (const ScoredTask& t : tasks) {
      const TaskResult& r = t.result;
      nlohmann::json j = {{"docs", r.docs},         {"requests", r.requests},          {"forwards", r.forwards},
                          {"path", t.spec.path}, {"num_fewshot", t.spec.num_fewshot}};
      for (const MetricValue& m : r.metrics) {
        j[m.name] = m.value;
        j[m.name + "_stderr"] = m.stderr;
      }
      out[t.spec.name] = j;
    }
    return out;
  }

  std::string format() const override {
    std::string s = fmt::format("downstream tasks ({} format)", task_format_name(format_used));
    int64_t fixture_docs = 0;
    for (const ScoredTask& t : tasks)
      if (is_test_fixture(t.spec.path)) fixture_docs += t.result.docs;
    if (fixture_docs > 0)
      s += fmt::format(" -- {} documents from the TEST FIXTURES (tests/fixtures/eval): a check of the code path, not "
                       "a benchmark score",
                       fixture_docs);
    s += fmt::format("\n  {:<14} {:>6} {:>5} {:<9} {:>8}   {:>8}\n", "task", "docs", "shots", "metric", "value",
                     "stderr");
    for (const ScoredTask* t : by_label(tasks, [](const ScoredTask& x) { return x.spec.name; }))
      for (const MetricValue& m : t->result.metrics)
        s += fmt::format("  {:<14} {:>6} {:>5} {:<9} {:8.4f} ± {:8.4f}\n", t->spec.name, t->result.docs,
                         t->spec.num_fewshot, m.name, m.value, m.stderr);
    return s;
  }
};

class TasksSurface final : public Surface {
 public:
  const char* name() const override { return "tasks"; }

  void parse(const YAML::Node& section, const std::string& where, SuiteSpec& spec) const override {
    SuiteSpec::Tasks& t = spec.tasks;
    std::string dir;
    int64_t limit = 0;
    std::optional<int64_t> num_fewshot;
    std::vector<TaskSpec> listed;
    config::read_mapping(section, "tasks.",
                         {config::choice("tasks.format", t.format, parse_task_format, task_format_name),
                          config::integer("tasks.max_length", t.max_length, 0), config::integer("tasks.limit", limit, 0),
                          config::optional_integer("tasks.num_fewshot", num_fewshot), config::text("tasks.dir", dir),
                          {"tasks.list", list_reader(listed), {}}},
                         where);
    t.list = dir.empty() ? std::vector<TaskSpec>{} : tasks_in_dir(dir);
    if (num_fewshot)
      for (TaskSpec& task : t.list) task.num_fewshot = *num_fewshot;
    t.list.insert(t.list.end(), listed.begin(), listed.end());
    for (TaskSpec& task : t.list)
      if (task.limit == 0) task.limit = limit;
    t.enabled = !t.list.empty();
  }

  bool enabled(const SuiteSpec& spec) const override { return spec.tasks.enabled; }
  // Each task's evaluation split and the split its shots come from.
  std::vector<std::string> input_files(const SuiteSpec& spec) const override {
    std::vector<std::string> paths;
    for (const TaskSpec& t : spec.tasks.list) paths.insert(paths.end(), {t.path, t.fewshot_path});
    return paths;
  }

  std::unique_ptr<SurfaceResult> run(model::Transformer& model, model::WeightSource& weights,
                                     const SurfaceContext& ctx) const override {
    const SuiteSpec::Tasks& spec = ctx.spec.tasks;
    auto r = std::make_unique<TasksSurfaceResult>();
    r->format_used = spec.format;
    for (const TaskSpec& t : spec.list) {
      TaskResult result = evaluate_task(model, weights, ctx.tokenizer, load_task(t, spec.format), spec.max_length,
                                        ctx.spec.batch_tokens, ctx.progress);
      ctx.progress.line(fmt::format("task {}: acc {:.4f} over {} docs, {}-shot", t.name, result.metrics[0].value,
                                    result.docs, t.num_fewshot));
      r->tasks.push_back({t, std::move(result)});
    }
    return r;
  }

 private:
  // tasks.list: explicit entries {name, path, fewshot, num_fewshot, limit}; `fewshot` defaults to
  // <task>_<split>.jsonl beside `path` (fewshot_split()).
  static std::function<void(const YAML::Node&, const std::string&)> list_reader(std::vector<TaskSpec>& out) {
    return [&out](const YAML::Node& list, const std::string& where) {
      check(list.IsSequence(), "{}: tasks.list must be a list of {{name, path, ...}}", where);
      for (size_t i = 0; i < list.size(); i++) {
        const std::string key = fmt::format("tasks.list[{}].", i);
        TaskSpec spec;
        config::read_mapping(list[i], key,
                             {config::text(key + "name", spec.name), config::text(key + "path", spec.path),
                              config::text(key + "fewshot", spec.fewshot_path),
                              config::integer(key + "num_fewshot", spec.num_fewshot, 0),
                              config::integer(key + "limit", spec.limit, 0)},
                             where);
        check(!spec.name.empty() && !spec.path.empty(), "{}: every tasks.list entry needs a name and a path", where);
        const std::vector<std::string>& names = task_names();
        check(std::find(names.begin(), names.end(), spec.name) != names.end(),
              "{}: {}name: unknown task '{}' (expected one of {})", where, key, spec.name, fmt::join(names, ", "));
        if (spec.fewshot_path.empty())
          spec.fewshot_path = (std::filesystem::path(spec.path).parent_path() /
                               (spec.name + "_" + fewshot_split(spec.name) + ".jsonl"))
                                  .string();
        out.push_back(spec);
      }
    };
  }
};

}  // namespace

const Surface& tasks_surface() {
  static const TasksSurface surface;
  return surface;
}

}  // namespace replica::eval
