// The few lines `replica report` prints: per run a sparkline of the smoothed loss, the LR and the held-out loss,
// and per comparison the bitwise result, the curve distance and the verdict.
#pragma once
#include <string>

#include "replica/report/report.h"

namespace replica::report {

// The values as a row of `width` block characters (▁ … █), each the mean of its share of the points, scaled from
// the smallest to the largest; empty for an empty series.
std::string sparkline(const Series& series, size_t width);

std::string terminal_summary(const Report& report);

}  // namespace replica::report
