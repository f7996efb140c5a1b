// metrics.jsonl: one JSON object per line, appended and flushed as it is written, doubles printed with
// round-trip precision so that two runs can be compared exactly.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace replica::metrics {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const nlohmann::json& record);

 private:
  std::FILE* file_;
};

}  // namespace replica::metrics
