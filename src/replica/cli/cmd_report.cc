// replica report: one self-contained HTML page of one or more runs' curves (inline SVG), their comparison — the
// first step where they differ bitwise, the distance between smoothed loss curves and a verdict — and a terminal
// summary. A reference may be another run's metrics.jsonl or a W&B CSV export of an OLMo-core run (docs/report.md).
#include <fmt/core.h>

#include <map>

#include "replica/cli/command.h"
#include "replica/report/load_run.h"
#include "replica/report/report.h"
#include "replica/report/summary.h"

namespace replica::cli {

static Command report_command(
    "report", "HTML report of runs' curves, compared with each other or a reference (metrics.jsonl or W&B CSV)",
    [](CLI::App& app) {
      struct Options {
        std::vector<std::string> runs;
        std::string reference, out = "report.html";
        report::ReportOptions report;
      };
      auto o = std::make_shared<Options>();
      app.add_option("runs", o->runs, "Run directories, metrics.jsonl files or W&B CSV exports")->required();
      app.add_option("--reference", o->reference,
                     "What the runs are compared with: a metrics.jsonl, a run directory or a W&B CSV export");
      app.add_option("--out", o->out, "The HTML file to write")->capture_default_str();
      app.add_option("--window", o->report.window, "Centred moving average over this many steps (odd)")
          ->capture_default_str();
      app.add_option("--threshold", o->report.threshold, "Curves agree when max |Δ| of the smoothed loss ≤ this (nat)")
          ->capture_default_str();
      return std::function<int()>([o] {
        std::map<std::string, int> seen;  // two runs both called "run" become "run" and "run#2"
        auto label = [&seen](const std::string& path) {
          const std::string base = report::default_label(path);
          const int n = ++seen[base];
          return n == 1 ? base : fmt::format("{}#{}", base, n);
        };
        std::vector<report::RunHistory> runs;
        for (const std::string& path : o->runs) runs.push_back(report::load_run(path, label(path)));
        std::optional<report::RunHistory> reference;
        if (!o->reference.empty()) reference = report::load_run(o->reference, "reference " + label(o->reference));
        const report::Report r = report::build_report(std::move(runs), std::move(reference), o->report);
        report::write_report(r, o->out);
        fmt::print("{}wrote {}\n", report::terminal_summary(r), o->out);
        return 0;
      });
    });

}  // namespace replica::cli
