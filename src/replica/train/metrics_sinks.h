// The run's metric destinations: metrics.jsonl, TensorBoard events and report.html (rank 0, in run.dir) and the
// console.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "replica/metrics/progress.h"
#include "replica/train/observer.h"
#include "replica/train/recipe.h"

namespace replica::train {

// metrics.jsonl, tb/ and report.html in run.dir on rank 0 (`root`), and the console on every rank (evaluations are
// published on rank 0 only).
std::unique_ptr<MetricsSink> run_metrics(const Recipe& recipe, bool root, metrics::Progress& console);

// The held-out loss that run_dir/metrics.jsonl records after `step` steps (the last such line), or none.
std::optional<double> logged_heldout_loss(const std::string& run_dir, int64_t step);

}  // namespace replica::train
