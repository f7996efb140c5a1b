// terminal_summary: one block per run, one line per comparison.
#include "replica/report/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace replica::report {
namespace {

// A loss to four decimals, or to four significant digits once fixed notation would run long (1e308 is 309 digits).
std::string loss_text(double v) { return std::abs(v) < 1e6 ? fmt::format("{:.4f}", v) : fmt::format("{:.4g}", v); }

}  // namespace

std::string sparkline(const Series& series, size_t width) {
  static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::vector<double> cells;
  const size_t n = series.size(), w = std::min(width, n);
  for (size_t c = 0; c < w; c++) {  // cell c holds points [c·n/w, (c+1)·n/w)
    double sum = 0.0;
    const size_t lo = c * n / w, hi = (c + 1) * n / w;
    for (size_t i = lo; i < hi; i++) sum += series[i].value;
    cells.push_back(sum / double(hi - lo));
  }
  if (cells.empty()) return "";
  const auto [lo, hi] = std::minmax_element(cells.begin(), cells.end());
  std::string out;
  for (const double v : cells) {
    const double t = *hi > *lo ? (v - *lo) / (*hi - *lo) : 0.5;
    out += std::isfinite(t) ? kBlocks[std::clamp(int(t * 7.0 + 0.5), 0, 7)] : " ";
  }
  return out;
}

std::string terminal_summary(const Report& report) {
  constexpr size_t kWidth = 40;
  std::string s;
  for (const RunHistory& run : report.runs) {
    const Series& loss = run.train_series(run.train.contains("loss") ? "loss" : "ce");
    s += fmt::format("{} ({}): {} steps", run.label, run.source, loss.size());
    if (!run.fingerprint.empty()) s += fmt::format(", data {}", run.fingerprint);
    s += "\n";
    const int64_t window = report.options.window;
    if (!loss.empty() && loss.back().step - loss.front().step < 2 * window) {
      // A window as long as the run averages every step into each point: a flat line from one mean to itself.
      s += fmt::format("  loss      {}  {} → {} (every step: the run is shorter than two {}-step windows)\n",
                       sparkline(loss, kWidth), loss_text(loss.front().value), loss_text(loss.back().value), window);
    } else if (!loss.empty()) {
      const Series smoothed = smooth_centred(loss, window);
      s += fmt::format("  loss      {}  {} → {} (smoothed, {} steps)\n", sparkline(smoothed, kWidth),
                       loss_text(smoothed.front().value), loss_text(smoothed.back().value), window);
    }
    if (const Series& lr = run.train_series("lr"); !lr.empty())
      s += fmt::format("  lr        {}  {:.3g} → {:.3g}\n", sparkline(lr, kWidth), lr.front().value, lr.back().value);
    if (const auto it = run.heldout.find("all"); it != run.heldout.end() && !it->second.empty())
      s += fmt::format("  held-out  {}  {} → {} ({} evaluations)\n", sparkline(it->second, kWidth),
                       loss_text(it->second.front().value), loss_text(it->second.back().value), it->second.size());
    for (const AlarmMark& a : run.alarms) s += fmt::format("  memorisation alarm at step {}\n", a.step);
  }
  const RunHistory& base = report.runs[report.baseline];
  for (const Comparison& c : report.comparisons) {
    const RunHistory& run = report.runs[c.run];
    s += fmt::format("{} vs {}: {}\n", run.label, base.label, describe_exact(c));
    s += fmt::format("  smoothed {}", describe_distance(c));
    if (c.distance)
      s += fmt::format(": {} ±{} nat", within(*c.distance, report.options.threshold) ? "WITHIN" : "OUTSIDE",
                       report.options.threshold);
    s += "\n";
  }
  return s;
}

}  // namespace replica::report
