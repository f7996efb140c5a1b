// report_charts: which series go on which chart, and how runs are told apart: by line style always (so that identical
// runs, drawn over each other, both show), and by colour where a chart has one line per run.
#include "replica/report/report_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace replica::report {
namespace {

const char* const kDashes[] = {"", "6 3", "2 2", "8 3 2 3"};

std::string run_dash(size_t run) { return kDashes[run % std::size(kDashes)]; }

Series scaled(Series s, double factor) {
  for (Point& p : s) p.value *= factor;
  return s;
}

bool has_points(const Chart& c) {
  for (const ChartSeries& s : c.series)
    if (!s.points.empty()) return true;
  return false;
}

// The memorisation alarms of every run, or of `only` that run.
std::vector<ChartRule> alarm_rules(const Report& report, const RunHistory* only = nullptr) {
  std::vector<ChartRule> rules;
  for (const RunHistory& run : report.runs)
    for (const AlarmMark& a : run.alarms)
      if (only == nullptr || only == &run)
        rules.push_back({"alarm", a.step,
                         fmt::format("{}: memorisation alarm at step {} (training loss fell since step {}, held-out "
                                     "loss did not)",
                                     run.label, a.step, a.from_step)});
  return rules;
}

Chart loss_chart(const Report& report) {
  const int64_t w = report.options.window;
  Chart c{.id = "loss",
          .title = "Training loss (CE + z-loss)",
          .y_label = "loss (nat)",
          .note = fmt::format("Faint: every step. Solid: centred moving average over {} steps (±{}), truncated at "
                              "the ends. Dashed orange rule: memorisation alarm.",
                              w, w / 2)};
  for (size_t i = 0; i < report.runs.size(); i++) {
    const RunHistory& run = report.runs[i];
    const Series& loss = run.train_series("loss");
    if (loss.empty()) continue;
    c.series.push_back({.id = run.label + "/raw",
                        .label = run.label + " (every step)",
                        .points = loss,
                        .color = palette_color(i),
                        .width = 1.0,
                        .opacity = 0.35});
    c.series.push_back({.id = run.label + "/smoothed",
                        .label = fmt::format("{} (smoothed, {} steps)", run.label, w),
                        .points = smooth_centred(loss, w),
                        .color = palette_color(i),
                        .dash = run_dash(i),
                        .width = 2.0});
  }
  c.rules = alarm_rules(report);
  return c;
}

// One line per run of a training metric.
Chart train_chart(const Report& report, const std::string& metric, const std::string& title, const std::string& y_label,
                  double factor = 1.0) {
  Chart c{.id = metric, .title = title, .y_label = y_label};
  for (size_t i = 0; i < report.runs.size(); i++) {
    const RunHistory& run = report.runs[i];
    const Series& s = run.train_series(metric);
    if (!s.empty())
      c.series.push_back({.id = run.label + "/" + metric,
                          .label = run.label,
                          .points = scaled(s, factor),
                          .color = palette_color(i),
                          .dash = run_dash(i)});
  }
  return c;
}

Chart grad_norm_chart(const Report& report) {
  Chart c = train_chart(report, "grad_norm", "Gradient norm (before clipping)", "global L2 norm");
  c.note = "Red rings: steps the skip-step rule declined (no update).";
  for (const RunHistory& run : report.runs) {
    const Series& norms = run.train_series("grad_norm");
    for (const Point& p : run.train_series("skipped"))
      if (p.value != 0.0) {
        const auto it = std::find_if(norms.begin(), norms.end(), [&](const Point& n) { return n.step == p.step; });
        c.markers.push_back({"skipped",
                             {p.step, it == norms.end() ? 0.0 : it->value},
                             fmt::format("{}: step {} skipped", run.label, p.step)});
      }
  }
  return c;
}

// One run's named series (held-out files, tasks): colour by name, the line style changing after each palette's
// worth of names, so that no two lines look alike.
Chart keyed_chart(const RunHistory& run, const std::map<std::string, Series>& named, const std::string& id,
                  const std::string& title, const std::string& y_label) {
  Chart c{.id = id, .title = title, .y_label = y_label};
  size_t i = 0;
  for (const auto& [name, s] : named) {
    c.series.push_back({.id = run.label + "/" + name,
                        .label = name,
                        .points = s,
                        .color = palette_color(i),
                        .dash = run_dash(i / kPaletteSize),
                        .width = name == "all" ? 2.5 : 1.5,
                        .dots = true});
    i++;
  }
  return c;
}

// Named series of every run: one chart for one run; for several, one chart per run, since a file's or task's
// colour and a run's line style on one chart (22 lines for two runs of ten files) cannot be read. The chart ids
// are `id` and `id-<run>`.
std::vector<Chart> keyed_charts(const Report& report, std::map<std::string, Series> RunHistory::*member,
                                const std::string& id, const std::string& title, const std::string& y_label) {
  std::vector<Chart> charts;
  for (const RunHistory& run : report.runs) {
    const bool one = report.runs.size() == 1;
    Chart c = keyed_chart(run, run.*member, one ? id : id + "-" + run.label,
                          one ? title : fmt::format("{}: {}", title, run.label), y_label);
    c.rules = alarm_rules(report, &run);
    charts.push_back(std::move(c));
  }
  return charts;
}

// Every run's held-out loss over all files, coloured by run: the one held-out chart that compares runs.
Chart heldout_chart(const Report& report) {
  Chart c{.id = "heldout", .title = "Held-out loss over every validation file", .y_label = "loss (nat)"};
  for (size_t i = 0; i < report.runs.size(); i++) {
    const RunHistory& run = report.runs[i];
    const auto all = run.heldout.find("all");
    if (all == run.heldout.end()) continue;
    c.series.push_back({.id = run.label + "/all",
                        .label = run.label,
                        .points = all->second,
                        .color = palette_color(i),
                        .dash = run_dash(i),
                        .width = 2.0,
                        .dots = true});
  }
  c.rules = alarm_rules(report);
  return c;
}

}  // namespace

std::vector<Chart> report_charts(const Report& report) {
  std::vector<Chart> charts = {
      loss_chart(report),
      train_chart(report, "ce", "Cross-entropy", "CE (nat)"),
      train_chart(report, "z_loss", "z-loss (1e-5 · logsumexp²)", "z-loss (nat)"),
      train_chart(report, "lr", "Learning rate", "LR"),
      grad_norm_chart(report),
      train_chart(report, "tokens_per_s", "Throughput", "tokens/s"),
      train_chart(report, "mfu", "Model FLOPs utilisation", "MFU (%)", 100.0),
  };
  const std::string per_file = "Held-out loss per validation file (\"all\": every file)";
  if (report.runs.size() > 1) charts.push_back(heldout_chart(report));
  for (Chart& c : keyed_charts(report, &RunHistory::heldout, "heldout", per_file, "loss (nat)"))
    charts.push_back(std::move(c));
  for (Chart& c : keyed_charts(report, &RunHistory::tasks, "tasks", "Downstream task scores", "score"))
    charts.push_back(std::move(c));
  std::erase_if(charts, [](const Chart& c) { return !has_points(c); });
  return charts;
}

}  // namespace replica::report
