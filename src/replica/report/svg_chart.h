// A line chart of series over steps, drawn as inline SVG inside an HTML <figure> with its legend: no script, no
// external resource. Every element a test (or a reader of the DOM) looks for carries a data- attribute: the figure
// data-chart="<id>", each line data-series="<id>", each legend entry data-legend="<id>", a skipped step
// data-mark="skipped", a memorisation alarm data-mark="alarm".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/report/series.h"

namespace replica::report {

struct ChartSeries {
  std::string id = "";     // unique within the chart
  std::string label = "";  // in the legend
  Series points = {};
  std::string color = "";
  std::string dash = "";  // SVG stroke-dasharray; empty: solid
  double width = 1.5, opacity = 1.0;
  bool dots = false;  // a dot at every point (evaluations, which have few)
};

// A point drawn over the lines (a skipped step on the grad-norm curve).
struct ChartMarker {
  std::string kind;
  Point at;
  std::string title;  // its tooltip
};

// A vertical rule across the plot (the step a memorisation alarm fired).
struct ChartRule {
  std::string kind;
  int64_t step = 0;
  std::string title;
};

struct Chart {
  std::string id = "", title = "", y_label = "";
  std::string note = "";  // a line under the chart (how it was smoothed, what a marker means)
  std::vector<ChartSeries> series = {};
  std::vector<ChartMarker> markers = {};
  std::vector<ChartRule> rules = {};
};

// The <figure> holding the chart's title, SVG, legend and note.
std::string render_chart(const Chart& chart);

// A colour for the i-th run or series, from a palette of kPaletteSize that stay apart on a white page (it repeats
// after them).
inline constexpr size_t kPaletteSize = 10;
std::string palette_color(size_t i);

}  // namespace replica::report
