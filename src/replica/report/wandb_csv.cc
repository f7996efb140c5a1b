// W&B CSV export → RunHistory, through OLMo-core's metric names (train/train_module.py, callbacks/speed_monitor.py and
// the evaluator callbacks record them).
#include "replica/report/wandb_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/parse_number.h"
#include "replica/report/csv.h"

namespace replica::report {
namespace {

struct TrainName {
  const char* olmo_core;
  const char* report;
  double scale;
};
constexpr TrainName kTrainNames[] = {
    {"train/CE loss", "ce", 1.0},           {"train/Z loss", "z_loss", 1.0},
    {"optim/LR (group 0)", "lr", 1.0},      {"optim/total grad norm", "grad_norm", 1.0},
    {"optim/step skipped", "skipped", 1.0}, {"throughput/device/TPS", "tokens_per_s", 1.0},
    {"throughput/device/MFU", "mfu", 0.01},
};

MetricColumn olmo_core_metric(const std::string& name) {
  for (const TrainName& t : kTrainNames)
    if (name == t.olmo_core) return {"train", t.report, t.scale};
  const std::string lm = "eval/lm/", lm_suffix = "/CE loss", downstream = "eval/downstream/";
  if (name.starts_with(lm) && name.ends_with(lm_suffix) && name.size() > lm.size() + lm_suffix.size())
    return {"heldout", name.substr(lm.size(), name.size() - lm.size() - lm_suffix.size()), 1.0};
  if (name.starts_with(downstream) && name.size() > downstream.size()) {
    std::string task = name.substr(downstream.size());
    // "<task> (<metric>)" → "<task> <metric>"
    const size_t open = task.rfind(" (");
    if (open != std::string::npos && task.ends_with(")"))
      task = task.substr(0, open) + " " + task.substr(open + 2, task.size() - open - 3);
    return {"tasks", task, 1.0};
  }
  return {};
}

}  // namespace

MetricColumn wandb_metric_column(const std::string& header) {
  if (header.ends_with("__MIN") || header.ends_with("__MAX")) return {};
  if (const MetricColumn m = olmo_core_metric(header); !m.kind.empty()) return m;
  const size_t dash = header.find(" - ");  // a panel export names its columns "<run name> - <metric>"
  return dash == std::string::npos ? MetricColumn{} : olmo_core_metric(header.substr(dash + 3));
}

void read_wandb_csv(const std::string& path, RunHistory& run) {
  std::string text = read_text_file(path);
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // a UTF-8 byte order mark (spreadsheet tools add one)
  const std::vector<CsvRow> rows = parse_csv(text, path);
  check(!rows.empty(), "{}: an empty CSV (expected a W&B export with a header row)", path);
  const std::vector<std::string>& header = rows[0].fields;
  const auto step_column =
      std::find_if(header.begin(), header.end(), [](const std::string& h) { return h == "_step" || h == "Step"; });
  check(step_column != header.end(), "{}:1: no step column (expected `_step` or `Step` in the header)", path);
  const size_t step_index = size_t(step_column - header.begin());
  std::vector<MetricColumn> columns;
  for (const std::string& h : header) columns.push_back(wandb_metric_column(h));
  check(std::any_of(columns.begin(), columns.end(), [](const MetricColumn& c) { return !c.kind.empty(); }),
        "{}:1: no OLMo-core metric among the columns (expected e.g. `train/CE loss`; see docs/report.md)", path);
  // Two columns of one metric (a panel export of several runs, "<run> - train/CE loss", or a duplicated column)
  // would be read as one curve stitched from both, and a verdict against it would mean nothing.
  std::map<std::pair<std::string, std::string>, size_t> first_column;
  for (size_t c = 0; c < columns.size(); c++) {
    if (columns[c].kind.empty()) continue;
    const auto [at, fresh] = first_column.try_emplace({columns[c].kind, columns[c].name}, c);
    check(fresh,
          "{}:1: columns '{}' and '{}' both hold the metric {}: the export holds several runs (or a duplicated "
          "column), which would be read as one stitched curve; export a single run (its run page's history) or delete "
          "the other run's columns",
          path, header[at->second], header[c], columns[c].name);
  }

  SeriesBuilder train, heldout, tasks;
  for (size_t r = 1; r < rows.size(); r++) {
    const CsvRow& row = rows[r];
    check(row.fields.size() == header.size(), "{}:{}: {} fields, expected {} as in the header", path, row.line,
          row.fields.size(), header.size());
    const std::optional<double> step = parse_double(row.fields[step_index]);
    // Range first: converting a double outside int64 (1e30, inf) is undefined behaviour.
    check(step && *step >= 0 && *step < 0x1p62 && *step == double(int64_t(*step)),
          "{}:{}: column {}: '{}' is not a step number", path, row.line, header[step_index], row.fields[step_index]);
    for (size_t c = 0; c < header.size(); c++) {
      const MetricColumn& m = columns[c];
      if (m.kind.empty() || row.fields[c].empty()) continue;
      const std::optional<double> value = parse_double(row.fields[c]);
      check(value.has_value() && std::isfinite(*value), "{}:{}:{}: column '{}': '{}' is not a {}number", path, row.line,
            c + 1, header[c], row.fields[c], value ? "finite " : "");
      SeriesBuilder& into = m.kind == "train" ? train : m.kind == "heldout" ? heldout : tasks;
      into.add(m.name, int64_t(*step), *value * m.scale);
    }
  }
  run.train = train.build();
  run.heldout = heldout.build();
  run.tasks = tasks.build();
  // metrics.jsonl's "loss" is ce + z_loss; OLMo-core logs the two parts.
  if (run.train.contains("ce")) {
    Series loss = run.train.at("ce");
    if (run.train.contains("z_loss")) {
      const Series& z = run.train.at("z_loss");
      std::erase_if(loss, [&](const Point& p) {
        return !std::binary_search(z.begin(), z.end(), p,
                                   [](const Point& a, const Point& b) { return a.step < b.step; });
      });
      for (Point& p : loss) p.value += value_at(z, p.step);
      run.train["loss"] = loss;
    }
  }
}

}  // namespace replica::report
