// render_chart: axes with round-number ticks, one SVG path per series (broken where a value is not finite), markers
// and rules on top, and an HTML legend under the plot.
#include "replica/report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "replica/report/html_escape.h"

namespace replica::report {
namespace {

constexpr double kWidth = 640, kHeight = 280;
constexpr double kLeft = 70, kRight = 16, kTop = 14, kBottom = 42;

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// 1, 2 or 5 times a power of ten, close to a fifth of the span: about five ticks.
double tick_step(double span) {
  const double raw = span / 5.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10.0 * magnitude;
}

// Widens a degenerate range (one value) so that it has a height to draw in.
// Spans are computed from halves, which is exact, so that values near ±DBL_MAX (a diverged run) give a finite span
// instead of inf and NaN coordinates.
double half_span(const Range& r) { return r.hi / 2 - r.lo / 2; }

Range padded(Range r, double fraction) {
  if (r.empty()) return {0.0, 1.0};
  const double half = half_span(r);
  const double pad = half > 0 ? half * (2 * fraction) : std::max(std::fabs(r.lo) * 0.05, 1e-12);
  const Range out{r.lo - pad, r.hi + pad};
  return std::isfinite(out.lo) && std::isfinite(out.hi) ? out : r;
}

// Ticks over the range; a span beyond DBL_MAX is ticked from its half.
double tick_step(const Range& r) {
  const double span = r.hi - r.lo;
  return std::isfinite(span) ? tick_step(span) : 2 * tick_step(half_span(r));
}

class Plot {
 public:
  Plot(Range x, Range y) : x_(x), y_(y) {}
  double x(double step) const { return kLeft + (step - x_.lo) / (x_.hi - x_.lo) * (kWidth - kLeft - kRight); }
  double y(double value) const { return kTop + (y_.hi / 2 - value / 2) / half_span(y_) * (kHeight - kTop - kBottom); }
  const Range& xr() const { return x_; }
  const Range& yr() const { return y_; }

 private:
  Range x_, y_;
};

std::string axes(const Plot& plot, const std::string& y_label) {
  std::string s;
  const double bottom = kHeight - kBottom, right = kWidth - kRight;
  s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#fff" stroke="#999"/>)", kLeft, kTop,
                   right - kLeft, bottom - kTop);
  const double ys = tick_step(plot.yr());
  for (double k = std::ceil(plot.yr().lo / ys); k * ys <= plot.yr().hi; k++) {  // multiples of the tick step
    const double v = k * ys, y = plot.y(v);
    s += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#eee"/>)", kLeft, y, right, y);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" class="tick">{:.6g}</text>)", kLeft - 4, y + 4,
                     k == 0 ? 0.0 : v);
  }
  const double xs = std::max(1.0, std::round(tick_step(plot.xr())));
  for (double k = std::ceil(plot.xr().lo / xs); k * xs <= plot.xr().hi; k++) {
    const double v = k * xs, x = plot.x(v);
    s += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#eee"/>)", x, kTop, x, bottom);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" class="tick">{:.0f}</text>)", x, bottom + 16,
                     v);
  }
  s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" class="axis">step</text>)", (kLeft + right) / 2,
                   kHeight - 6);
  s += fmt::format(
      R"svg(<text x="14" y="{:.1f}" text-anchor="middle" class="axis" transform="rotate(-90 14 {:.1f})">)svg"
      "{}</text>",
      (kTop + bottom) / 2, (kTop + bottom) / 2, escape_html(y_label));
  return s;
}

std::string line(const Plot& plot, const ChartSeries& s) {
  std::string d;
  bool pen_down = false;
  for (const Point& p : s.points) {
    if (!std::isfinite(p.value)) {
      pen_down = false;
      continue;
    }
    d += fmt::format("{}{:.2f} {:.2f} ", pen_down ? "L" : "M", plot.x(double(p.step)), plot.y(p.value));
    pen_down = true;
  }
  std::string g = fmt::format(R"(<g data-series="{}" data-points="{}"><title>{}</title>)", escape_html(s.id),
                              s.points.size(), escape_html(s.label));
  g += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="{}" stroke-opacity="{}"{}/>)", d, s.color,
                   s.width, s.opacity, s.dash.empty() ? "" : fmt::format(R"( stroke-dasharray="{}")", s.dash));
  // A lone point draws no line: it gets a dot whatever `dots` says.
  if (s.dots || s.points.size() == 1)
    for (const Point& p : s.points)
      if (std::isfinite(p.value))
        g += fmt::format(R"(<circle cx="{:.2f}" cy="{:.2f}" r="2.5" fill="{}"/>)", plot.x(double(p.step)),
                         plot.y(p.value), s.color);
  return g + "</g>";
}

}  // namespace

std::string palette_color(size_t i) {
  static const char* const colors[kPaletteSize] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colors[i % std::size(colors)];
}

std::string render_chart(const Chart& chart) {
  Range xs, ys;
  for (const ChartSeries& s : chart.series)
    for (const Point& p : s.points) {
      xs.add(double(p.step));
      ys.add(p.value);
    }
  for (const ChartRule& r : chart.rules) xs.add(double(r.step));
  if (!xs.empty() && xs.lo == xs.hi) xs = {xs.lo - 1, xs.hi + 1};
  const Plot plot(xs.empty() ? Range{0, 1} : xs, padded(ys, 0.05));

  std::string svg =
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" role="img">)",
                  kWidth, kHeight, kWidth, kHeight);
  svg += axes(plot, chart.y_label);
  for (const ChartSeries& s : chart.series) svg += line(plot, s);
  for (const ChartMarker& m : chart.markers)
    svg += fmt::format(R"(<circle data-mark="{}" cx="{:.2f}" cy="{:.2f}" r="5" fill="none" stroke="#d00" )"
                       R"(stroke-width="2"><title>{}</title></circle>)",
                       escape_html(m.kind), plot.x(double(m.at.step)),
                       std::isfinite(m.at.value) ? plot.y(m.at.value) : kTop, escape_html(m.title));
  for (const ChartRule& r : chart.rules) {
    const double x = plot.x(double(r.step));
    svg += fmt::format(R"(<g data-mark="{}"><title>{}</title><line x1="{:.2f}" y1="{}" x2="{:.2f}" y2="{}" )"
                       R"(stroke="#e67e00" stroke-width="2" stroke-dasharray="5 3"/>)"
                       R"(<text x="{:.2f}" y="{}" text-anchor="end" class="rule">{}</text></g>)",
                       escape_html(r.kind), escape_html(r.title), x, kTop, x, kHeight - kBottom, x - 3, kTop + 11,
                       escape_html(r.kind));
  }
  svg += "</svg>";

  std::string legend = R"(<div class="legend">)";
  for (const ChartSeries& s : chart.series)
    legend += fmt::format(R"(<span data-legend="{}"><i style="background:{};opacity:{}"></i>{}</span>)",
                          escape_html(s.id), s.color, std::max(s.opacity, 0.5), escape_html(s.label));
  legend += "</div>";
  return fmt::format(R"(<figure data-chart="{}" id="chart-{}"><figcaption>{}</figcaption>{}{}{}</figure>)",
                     escape_html(chart.id), escape_html(chart.id), escape_html(chart.title), svg, legend,
                     chart.note.empty() ? "" : fmt::format(R"(<p class="note">{}</p>)", escape_html(chart.note)));
}

}  // namespace replica::report
