// The report's charts, one per metric, each holding every run's series: loss (raw and smoothed), CE, z-loss, LR,
// grad norm (skipped steps marked), tokens/s, MFU, held-out loss per validation file, downstream task scores; the
// memorisation alarm is a rule on the loss and held-out charts. A chart no run has a point for is left out.
#pragma once
#include <vector>

#include "replica/report/svg_chart.h"
#include "replica/report/report.h"

namespace replica::report {

// Series ids are "<run label>/<key>": "a/raw" and "a/smoothed" on the loss chart, "a/<metric>" on the other
// training charts, "a/<file label>" (and "a/all") on the held-out chart, "a/<task> <metric>" on the tasks chart.
std::vector<Chart> report_charts(const Report& report);

}  // namespace replica::report
