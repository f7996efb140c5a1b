// metrics.jsonl writer.
#include "replica/metrics/metrics_log.h"

#include <cerrno>
#include <cstring>

#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::metrics {

MetricsLog::MetricsLog(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "a")) {
  check(file_ != nullptr, "{}: cannot open for writing ({})", path, std::strerror(errno));
}

MetricsLog::~MetricsLog() { std::fclose(file_); }

void MetricsLog::write(const nlohmann::json& record) {
  // nlohmann::json prints doubles in their shortest round-trip form (up to 17 significant digits).
  const std::string line = record.dump() + "\n";
  write_all(file_, line.data(), line.size(), path_);
  flush_all(file_, path_);
}

}  // namespace replica::metrics
