// ProfileSum: device time per operation summed over takes, tabulated as Markdown.
#include "replica/kernels/profile.h"

#include <fmt/core.h>

#include <algorithm>

namespace replica {

void ProfileSum::add(const std::vector<OpTime>& ops) {
  for (const OpTime& t : ops) {
    auto it = std::find_if(ops_.begin(), ops_.end(), [&](const OpTime& o) { return o.op == t.op; });
    if (it == ops_.end()) {
      ops_.push_back(t);
    } else {
      it->calls += t.calls;
      it->ms += t.ms;
      it->bytes += t.bytes;
    }
  }
}

std::string ProfileSum::table(int64_t steps, double step_ms) const {
  std::vector<OpTime> ops = ops_;
  std::stable_sort(ops.begin(), ops.end(), [](const OpTime& a, const OpTime& b) { return a.ms > b.ms; });
  const double n = double(std::max<int64_t>(steps, 1));
  auto row = [&](const std::string& op, const std::string& calls, double ms, double bytes) {
    const std::string bandwidth = bytes > 0 && ms > 0 ? fmt::format("{:.0f}", bytes / (ms * 1e6)) : "";
    return fmt::format("| {} | {} | {:.2f} | {:.1f} % | {} |\n", op, calls, ms, 100 * ms / step_ms, bandwidth);
  };
  std::string text =
      "| operation | calls per step | ms per step | share of the step | GB/s (bytes by contract) |\n"
      "|---|---|---|---|---|\n";
  double busy_ms = 0;
  for (const OpTime& t : ops) {
    text += row(t.op, fmt::format("{:g}", double(t.calls) / n), t.ms / n, t.bytes / n);
    busy_ms += t.ms / n;
  }
  return text + row("all operations", "", busy_ms, 0) + row("the device waiting for the host", "", step_ms - busy_ms, 0);
}

}  // namespace replica
