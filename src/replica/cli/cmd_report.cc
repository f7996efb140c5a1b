// replica report: one self-contained HTML page of one or more runs' curves (inline SVG), their comparison — the
// first step where they differ bitwise, the distance between smoothed loss curves and a verdict — and a terminal
// summary. A reference may be another run's metrics.jsonl or a W&B CSV export of an OLMo-core run (docs/report.md).
#include <fmt/core.h>

#include <filesystem>
#include <map>

#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/output_guard.h"
#include "replica/report/load_run.h"
#include "replica/report/report.h"
#include "replica/report/summary.h"

namespace replica::cli {

namespace fs = std::filesystem;

// The files a report reads of each run it is given (a run directory's metrics.jsonl and config.yaml, or the file).
static std::vector<std::string> report_inputs(const std::vector<std::string>& runs, const std::string& reference) {
  std::vector<std::string> inputs;
  for (const std::string& path : runs) {
    inputs.push_back(path);
    if (fs::is_directory(path))
      for (const char* name : {"metrics.jsonl", "config.yaml"}) inputs.push_back((fs::path(path) / name).string());
  }
  if (!reference.empty()) {
    std::vector<std::string> more = report_inputs({reference}, "");
    inputs.insert(inputs.end(), more.begin(), more.end());
  }
  return inputs;
}

// A report replaces only a report: an existing file that is not an HTML page was put there by someone else.
static void check_replaces_a_report(const std::string& out) {
  if (!fs::is_regular_file(out) || fs::file_size(out) == 0) return;
  const std::string doctype = "<!DOCTYPE html>";
  std::FILE* f = std::fopen(out.c_str(), "rb");
  check(f != nullptr, "--out {}: cannot open the existing file to see what it is", out);
  std::string head(doctype.size(), '\0');
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  check(head == doctype,
        "--out {}: exists and is not an HTML report (it does not start with {}); replica report "
        "replaces only its own pages: move the file or choose another --out",
        out, doctype);
}

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
        check_output_path("--out", o->out, report_inputs(o->runs, o->reference));
        check_replaces_a_report(o->out);
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
