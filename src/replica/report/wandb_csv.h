// Reads a Weights & Biases CSV export of an OLMo-core run as a RunHistory, mapping OLMo-core's metric names onto
// metrics.jsonl's (docs/report.md has the table): train/CE loss → ce, train/Z loss → z_loss, optim/LR (group 0) →
// lr, optim/total grad norm → grad_norm, optim/step skipped → skipped, throughput/device/TPS → tokens_per_s,
// throughput/device/MFU (percent) → mfu (fraction), eval/lm/<set>/CE loss → held-out <set>, eval/downstream/<task>
// (<metric>) → task "<task> <metric>". The step column is `_step` (run history export) or `Step` (panel export).
#pragma once
#include <string>

#include "replica/report/run_history.h"

namespace replica::report {

// The metric a W&B column holds, in report names ({"train", "ce"}, {"heldout", "c4_en"}, {"tasks", "arc_easy
// acc"}), or an empty kind for a column the report does not use. A panel export's "<run name> - " prefix is
// dropped; its "__MIN" / "__MAX" band columns are not used.
struct MetricColumn {
  std::string kind = "", name = "";
  double scale = 1.0;  // multiplies the value (MFU: percent → fraction)
};
MetricColumn wandb_metric_column(const std::string& header);

// Fills run.train, run.heldout and run.tasks; an empty cell is no point. A header without a step column, a row with
// the wrong number of fields or a cell that is not a number raises replica::Error naming the file, line and column.
void read_wandb_csv(const std::string& path, RunHistory& run);

}  // namespace replica::report
