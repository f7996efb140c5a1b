// Reads a run's metrics.jsonl (the writer is train/metrics_sinks.cc): training lines {"step", "loss", "ce",
// "z_loss", "lr", "grad_norm", "skipped", "tokens_per_s", "mfu", ...} and evaluation lines {"step", "eval":
// {"heldout_loss", "files": {label: loss}, "suite": {"tasks": {task: {metric: value}}}, "memorisation_alarm"}}.
#pragma once
#include <string>

#include "replica/report/run_history.h"

namespace replica::report {

// Fills run.train, run.heldout, run.tasks and run.alarms from `path`; a line that is not such a record raises
// replica::Error naming the file and line.
void read_metrics_jsonl(const std::string& path, RunHistory& run);

}  // namespace replica::report
