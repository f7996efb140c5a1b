// Where a run comes from: a run directory (metrics.jsonl, config.yaml, the latest checkpoint's train_state.json),
// a metrics.jsonl file, or a W&B CSV export (*.csv).
#pragma once
#include <string>

#include "replica/report/run_history.h"

namespace replica::report {

// Reads the run at `path`, labelled `label`; replica::Error names the path and what was expected.
RunHistory load_run(const std::string& path, const std::string& label);

// The label a path gets by default: a run directory's name, or a file's name without its extension (its directory's
// name for a metrics.jsonl).
std::string default_label(const std::string& path);

}  // namespace replica::report
