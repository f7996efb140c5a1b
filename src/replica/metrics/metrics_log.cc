// metrics.jsonl writer.
#include "replica/metrics/metrics_log.h"

#include "replica/core/error.h"

namespace replica::metrics {

MetricsLog::MetricsLog(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {
  check(file_ != nullptr, "{}: cannot open for writing", path);
}

MetricsLog::~MetricsLog() { std::fclose(file_); }

void MetricsLog::write(const nlohmann::json& record) {
  // nlohmann::json prints doubles in their shortest round-trip form (up to 17 significant digits).
  const std::string line = record.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace replica::metrics
