// render_html: the page's sections in order; the charts come from report/report_charts.h.
#include "replica/report/html_page.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "replica/report/report_charts.h"
#include "replica/report/html_escape.h"

namespace replica::report {
namespace {

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1360px;color:#222}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}td,th{padding:3px 10px;border-bottom:1px solid #eee;
text-align:left}th{background:#f6f6f6}td.num{text-align:right}.ok{color:#176b2c;font-weight:600}
.bad{color:#b3261e;font-weight:600}#charts{display:flex;flex-wrap:wrap;gap:18px}
figure{margin:0;border:1px solid #ddd;border-radius:4px;padding:8px;width:640px}
figcaption{font-weight:600;margin-bottom:4px}.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px}
.legend i{display:inline-block;width:14px;height:4px;margin-right:5px;vertical-align:middle}
.note{font-size:12px;color:#555;margin:4px 0 0}.tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}
.rule{font-size:11px;fill:#e67e00}pre{background:#f8f8f8;padding:8px;overflow:auto;font-size:12px}
code{font-size:12px}
)";

std::string number(double v) { return fmt::format("{:.4f}", v); }

// The value at exactly `step`, if the series has one.
std::optional<double> at_step(const Series& s, int64_t step) {
  const auto it = std::find_if(s.begin(), s.end(), [step](const Point& p) { return p.step == step; });
  return it == s.end() ? std::nullopt : std::optional<double>(it->value);
}

std::string cell(const std::optional<double>& v) {
  return v ? fmt::format(R"(<td class="num">{}</td>)", number(*v)) : R"(<td class="num">—</td>)";
}

std::string step_range(const Series& s) {
  return s.empty() ? "—" : fmt::format("{}–{} ({} logged)", s.front().step, s.back().step, s.size());
}

std::string runs_section(const Report& report) {
  std::string s = R"(<h2>Runs</h2><table id="runs"><tr><th>run</th><th>source</th><th>steps</th><th>last loss</th>)"
                  R"(<th>last held-out</th><th>data fingerprint</th></tr>)";
  for (size_t i = 0; i < report.runs.size(); i++) {
    const RunHistory& run = report.runs[i];
    const Series& loss = run.train_series(run.train.contains("loss") ? "loss" : "ce");
    const auto heldout = run.heldout.find("all");
    std::string role =
        i == report.baseline && report.runs.size() > 1 ? (report.has_reference ? " (reference)" : " (baseline)") : "";
    s += fmt::format("<tr><td>{}{}</td><td><code>{}</code></td><td>{}</td>{}{}<td>{}</td></tr>", escape_html(run.label),
                     role, escape_html(run.source), step_range(loss),
                     cell(loss.empty() ? std::nullopt : std::optional<double>(loss.back().value)),
                     cell(heldout == run.heldout.end() || heldout->second.empty()
                              ? std::nullopt
                              : std::optional<double>(heldout->second.back().value)),
                     run.fingerprint.empty() ? "—"
                                             : fmt::format("<code>{}</code> (checkpoint at step {})",
                                                           escape_html(run.fingerprint), run.fingerprint_step));
  }
  return s + "</table>";
}

std::string comparison_section(const Report& report) {
  if (report.comparisons.empty()) return "";
  const RunHistory& base = report.runs[report.baseline];
  std::string s = fmt::format(
      R"(<h2>Comparison with {}</h2><table id="comparison"><tr><th>run</th><th>bitwise</th><th>smoothed loss )"
      R"(distance</th><th>verdict (max |Δ| ≤ {} nat)</th></tr>)",
      escape_html(base.label), report.options.threshold);
  for (const Comparison& c : report.comparisons) {
    const RunHistory& run = report.runs[c.run];
    const char* verdict = !c.distance ? "—" : within(*c.distance, report.options.threshold) ? "within" : "outside";
    const std::string first = !c.exact              ? "none"
                              : c.exact->difference ? std::to_string(c.exact->difference->step)
                                                    : "none";
    s += fmt::format(R"(<tr data-run="{}" data-first-difference="{}" data-verdict="{}"><td>{}</td><td>{}</td>)"
                     R"(<td>{}</td><td class="{}">{}</td></tr>)",
                     escape_html(run.label), first, verdict, escape_html(run.label), escape_html(describe_exact(c)),
                     escape_html(describe_distance(c)), std::string(verdict) == "within" ? "ok" : "bad", verdict);
  }
  return s + fmt::format(
                 R"(</table><p class="note">Bitwise: the training metrics ({}) as doubles; metrics.jsonl prints each )"
                 "in its shortest round-trip form, so equal bits are equal text. Distance: |Δ| of the centred moving "
                 "averages at each step of the run that the baseline covers, the baseline interpolated linearly "
                 "between its logged steps.</p>",
                 fmt::join(kExactMetrics, ", "));
}

std::string eval_table(const Report& report) {
  std::set<int64_t> steps;
  for (const RunHistory& run : report.runs)
    if (const auto it = run.heldout.find("all"); it != run.heldout.end())
      for (const Point& p : it->second) steps.insert(p.step);
  if (steps.empty()) return "";
  const RunHistory& base = report.runs[report.baseline];
  std::string s = R"(<h2>At the evaluation steps</h2><table id="eval-table"><tr><th>step</th>)";
  for (const RunHistory& run : report.runs) {
    s += fmt::format("<th>{} loss</th><th>{} held-out</th>", escape_html(run.label), escape_html(run.label));
    if (&run != &base && report.runs.size() > 1) s += fmt::format("<th>Δ held-out vs {}</th>", escape_html(base.label));
  }
  s += "</tr>";
  auto heldout_at = [](const RunHistory& run, int64_t step) -> std::optional<double> {
    const auto it = run.heldout.find("all");
    return it == run.heldout.end() ? std::nullopt : at_step(it->second, step);
  };
  for (int64_t step : steps) {
    s += fmt::format(R"(<tr data-step="{}"><td class="num">{}</td>)", step, step);
    for (const RunHistory& run : report.runs) {
      s += cell(at_step(run.train_series("loss"), step)) + cell(heldout_at(run, step));
      if (&run == &base || report.runs.size() < 2) continue;
      const std::optional<double> a = heldout_at(run, step), b = heldout_at(base, step);
      s += cell(a && b ? std::optional<double>(*a - *b) : std::nullopt);
    }
    s += "</tr>";
  }
  return s + "</table>";
}

std::string config_section(const Report& report) {
  std::string s;
  for (const RunHistory& run : report.runs)
    if (!run.config_yaml.empty())
      s += fmt::format("<details open><summary>{}: config.yaml (resolved)</summary><pre>{}</pre></details>",
                       escape_html(run.label), escape_html(run.config_yaml));
  return s.empty() ? "" : R"(<h2>Configuration</h2><div id="config">)" + s + "</div>";
}

}  // namespace

const char* page_style() { return kStyle; }

std::string render_html(const Report& report) {
  std::string labels;
  for (const RunHistory& run : report.runs) labels += (labels.empty() ? "" : ", ") + run.label;
  std::string charts;
  for (const Chart& c : report_charts(report)) charts += render_chart(c);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>replica report: {}</title>"
      "<style>{}</style></head><body><h1>replica report: {}</h1>{}{}{}<h2>Curves</h2><div id=\"charts\">{}</div>{}"
      "</body></html>\n",
      escape_html(labels), kStyle, escape_html(labels), runs_section(report), comparison_section(report),
      eval_table(report), charts, config_section(report));
}

}  // namespace replica::report
