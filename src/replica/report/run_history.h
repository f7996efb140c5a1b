// One run as the report reads it (from a run directory, a metrics.jsonl or a W&B CSV export): its metrics as series
// by name, the memorisation alarms, and what the run was — its resolved config and data fingerprint.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "replica/metrics/metrics_schema.h"
#include "replica/report/series.h"

namespace replica::report {

// The training metrics, under the names metrics.jsonl gives them (metrics/metrics_schema.h; one point per optimizer
// step): "skipped" reads as 1 for a step the skip-step rule declined, else 0.
using metrics::jsonl::kTrainMetrics;

struct AlarmMark {
  int64_t step = 0, from_step = 0;  // the evaluation that raised it, and the one it compared against
};

struct RunHistory {
  std::string label = "";                      // its name in legends and tables
  std::string source = "";                     // the path it was read from
  std::map<std::string, Series> train = {};    // kTrainMetrics
  std::map<std::string, Series> heldout = {};  // held-out loss: "all", and one per validation file label
  std::map<std::string, Series> tasks = {};    // downstream scores: "<task> <metric>" (e.g. "arc_easy acc_norm")
  std::vector<AlarmMark> alarms = {};
  std::string config_yaml = "";  // the resolved config.yaml (empty when the source has none)
  std::string fingerprint = "";  // data fingerprint of the latest checkpoint's train_state.json (empty: none)
  int64_t fingerprint_step = 0;

  // The series of `metric` in `train`, or an empty one.
  const Series& train_series(const std::string& metric) const;
};

}  // namespace replica::report
