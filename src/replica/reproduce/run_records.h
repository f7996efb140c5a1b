// What a replica run directory says about how it was trained, for the reproduction page and JSON: the data audit of
// its loader (data/audit.h, as `replica data audit --config` runs it: the loader of the recipe its newest checkpoint
// was trained with, replayed for every step up to that checkpoint at the world size it was saved with, without the
// model) and its resume events (run.dir/resumes.jsonl, one line per resume: the step and checkpoint resumed from,
// the world size saved and resumed at, what the resume changed).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replica/reproduce/checkpoint_series.h"

namespace replica::reproduce {

struct DataAuditResult {
  bool ok = false;   // no instance read twice within a planned epoch
  std::string text;  // the report, as `replica data audit` prints it
  std::string fingerprint;
  int64_t steps = 0;
  int64_t world_size = 1;
  double repeat_fraction = 0.0;
  std::string error;  // why the audit could not run (the data files gone, say): then ok and text mean nothing
};

// None unless `series` is a replica run.
std::optional<DataAuditResult> audit_run_data(const CheckpointSeries& series);

struct ResumeEvent {
  int64_t step = 0, tokens = 0;
  std::string checkpoint;
  int64_t saved_world_size = 1, world_size = 1;
  std::vector<std::string> changes;  // "resume changes optim.lr: 0.003 -> 0.006", "data changed (...)"
};

// The run's resume events in the order they happened; empty for a run never resumed (or not a replica run).
// replica::Error naming the file and line for one that is not a resume record.
std::vector<ResumeEvent> read_resume_events(const CheckpointSeries& series);

}  // namespace replica::reproduce
