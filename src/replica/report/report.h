// A report of one or more runs: each run's curves, and, with two or more runs or a reference, how each run compares
// with the baseline (the reference, else the first run) — bitwise and as the distance between smoothed loss curves.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replica/report/compare.h"
#include "replica/report/run_history.h"

namespace replica::report {

struct ReportOptions {
  int64_t window = 21;      // steps of the centred moving average (±10)
  double threshold = 0.01;  // nat: the largest |Δ| of the smoothed loss for two curves to agree
};

struct Comparison {
  size_t run = 0;  // index into Report::runs, compared with the baseline
  std::optional<ExactComparison> exact = std::nullopt;
  std::optional<CurveDistance> distance = std::nullopt;
};

struct Report {
  std::vector<RunHistory> runs = {};  // the reference, when there is one, last
  size_t baseline = 0;
  bool has_reference = false;
  ReportOptions options = {};
  std::vector<Comparison> comparisons = {};  // every run but the baseline, in order
};

// A comparison in words, as the page and the terminal summary state it.
std::string describe_exact(const Comparison& c);
std::string describe_distance(const Comparison& c);

Report build_report(std::vector<RunHistory> runs, std::optional<RunHistory> reference, const ReportOptions& options);

// The self-contained HTML page (report/html_page.cc), written to a temporary name and renamed onto `path`.
void write_report(const Report& report, const std::string& path);

// What `replica train` leaves in run.dir: report.html of that run alone.
void write_run_report(const std::string& run_dir);

}  // namespace replica::report
