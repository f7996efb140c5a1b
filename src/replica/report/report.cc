// build_report: the comparisons against the baseline; write_report and the trainer's run report.
#include "replica/report/report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/report/html_page.h"
#include "replica/report/load_run.h"
#include "replica/report/series.h"

namespace replica::report {

Report build_report(std::vector<RunHistory> runs, std::optional<RunHistory> reference, const ReportOptions& options) {
  check(!runs.empty(), "report: no run given");
  check_window(options.window);
  check(std::isfinite(options.threshold) && options.threshold >= 0,
        "threshold {} nat: expected a finite number ≥ 0 (the largest |Δ| of the smoothed loss for two curves to agree)",
        options.threshold);
  Report report{.runs = std::move(runs), .options = options};
  if (reference) {
    report.runs.push_back(std::move(*reference));
    report.has_reference = true;
    report.baseline = report.runs.size() - 1;
  }
  if (report.runs.size() < 2) return report;
  const RunHistory& base = report.runs[report.baseline];
  for (size_t i = 0; i < report.runs.size(); i++)
    if (i != report.baseline)
      report.comparisons.push_back({.run = i,
                                    .exact = compare_exact(report.runs[i], base),
                                    .distance = curve_distance(report.runs[i], base, options.window)});
  return report;
}

std::string describe_exact(const Comparison& c) {
  if (!c.exact) return "no common steps to compare";
  const ExactComparison& e = *c.exact;
  if (!e.difference)
    return fmt::format("identical at all {} steps both logged in {}–{}", e.identical_steps, e.first_step, e.last_step);
  const FirstDifference& d = *e.difference;
  auto value = [](const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string("not logged"); };
  return fmt::format("first differs at step {}: {} {} vs {} ({} identical steps before)", d.step, d.metric, value(d.a),
                     value(d.b), e.identical_steps);
}

std::string describe_distance(const Comparison& c) {
  if (!c.distance) return "no overlapping loss curve";
  const CurveDistance& d = *c.distance;
  return fmt::format("{}: max |Δ| {:.4g} (step {}), mean |Δ| {:.4g} over {} {} {}–{}, window {} steps", d.metric,
                     d.max_abs, d.max_step, d.mean_abs, d.points,
                     d.grid == CurveGrid::common_steps ? "steps both logged in"
                                                       : "steps of the run (none in common; baseline interpolated) in",
                     d.first_step, d.last_step, d.window);
}

void write_report(const Report& report, const std::string& path) { write_text_file_atomic(path, render_html(report)); }

void write_run_report(const std::string& run_dir) {
  std::vector<RunHistory> runs;
  runs.push_back(load_run(run_dir, default_label(run_dir)));
  write_report(build_report(std::move(runs), std::nullopt, {}),
               (std::filesystem::path(run_dir) / "report.html").string());
}

}  // namespace replica::report
