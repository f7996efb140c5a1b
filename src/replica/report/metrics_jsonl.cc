// metrics.jsonl → RunHistory. Doubles are written in their shortest round-trip form, so the values read back are the
// exact doubles the run computed: the report's bitwise comparison compares these.
#include "replica/report/metrics_jsonl.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/metrics/metrics_schema.h"

namespace replica::report {
namespace {

using nlohmann::json;
namespace jsonl = metrics::jsonl;

// A task's entry in the tasks surface holds its metrics, their standard errors and bookkeeping; the scores are the
// numbers that are neither.
bool is_task_score(const std::string& key, const json& value) {
  if (!value.is_number()) return false;
  if (key == "docs" || key == "requests" || key == "forwards") return false;
  return !key.ends_with("_stderr");
}

void read_evaluation(const json& e, int64_t step, SeriesBuilder& heldout, SeriesBuilder& tasks, RunHistory& run) {
  check(e.is_object(), "\"eval\" is {}, expected an object (what `replica train` logs for an evaluation)", e.dump());
  check(!e.contains("files") || e.at("files").is_object(),
        "\"eval.files\" is {}, expected an object of held-out losses by file label", e.at("files").dump());
  std::erase_if(run.alarms, [step](const AlarmMark& a) { return a.step == step; });  // a re-evaluated step
  if (e.contains(jsonl::kHeldoutLoss)) heldout.add("all", step, e.at(jsonl::kHeldoutLoss).get<double>());
  if (e.contains(jsonl::kFiles))
    for (const auto& [label, loss] : e.at(jsonl::kFiles).items()) heldout.add(label, step, loss.get<double>());
  if (e.contains(jsonl::kSuite) && e.at(jsonl::kSuite).contains("tasks"))
    for (const auto& [task, result] : e.at(jsonl::kSuite).at("tasks").items())
      if (result.is_object())  // "format" is a string beside the tasks
        for (const auto& [metric, value] : result.items())
          if (is_task_score(metric, value)) tasks.add(task + " " + metric, step, value.get<double>());
  if (e.contains(jsonl::kAlarm)) run.alarms.push_back({step, e.at(jsonl::kAlarm).at("from_step").get<int64_t>()});
}

}  // namespace

void read_metrics_jsonl(const std::string& path, RunHistory& run) {
  check(std::filesystem::is_regular_file(path), "{}: not a file (expected the run's metrics.jsonl)", path);
  std::ifstream in(path);
  check(in.good(), "{}: cannot open metrics.jsonl", path);
  SeriesBuilder train, heldout, tasks;
  std::string text;
  for (int64_t line = 1; std::getline(in, text); line++) {
    if (text.empty()) continue;
    try {
      const json j = json::parse(text);
      const std::optional<int64_t> at = jsonl::step_of(j);
      check(at.has_value(), "expected a JSON object with an integer \"{}\"", jsonl::kStep);
      const int64_t step = *at;
      check(step >= 0, "\"step\" is {}, expected a step number ≥ 0", step);
      if (j.contains(jsonl::kEval)) read_evaluation(j.at(jsonl::kEval), step, heldout, tasks, run);
      if (!j.contains(jsonl::kLoss)) continue;
      for (const char* metric : kTrainMetrics)
        if (j.contains(metric) && !j.at(metric).is_null()) {  // null: not measured (MFU n/a, metrics/peak.h)
          const json& v = j.at(metric);
          train.add(metric, step, v.is_boolean() ? double(v.get<bool>()) : v.get<double>());
        }
    } catch (const json::exception& e) {
      fail("{}:{}: not a metrics record ({})", path, line, e.what());
    } catch (const Error& e) {
      fail("{}:{}: {}", path, line, e.what());
    }
  }
  std::sort(run.alarms.begin(), run.alarms.end(),
            [](const AlarmMark& a, const AlarmMark& b) { return a.step < b.step; });
  run.train = train.build();
  run.heldout = heldout.build();
  run.tasks = tasks.build();
}

}  // namespace replica::report
