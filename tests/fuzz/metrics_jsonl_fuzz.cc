// Fuzzes the two readers of metrics.jsonl: the report's (read_metrics_jsonl) and a resume's (truncate_metrics,
// which rewrites the file keeping the steps up to the checkpoint's). A resume either refuses the file, naming a
// line, or keeps only terminated lines that are records.
#include <nlohmann/json.hpp>
#include <sstream>

#include "fuzz_input.h"
#include "replica/core/file.h"
#include "replica/report/metrics_jsonl.h"
#include "replica/train/checkpointing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  const std::string path = fuzz::write_input("metrics.jsonl", data, size);
  fuzz::expect_only_replica_errors([&] {
    report::RunHistory run;
    report::read_metrics_jsonl(path, run);
  });
  fuzz::expect_only_replica_errors([&] {
    train::truncate_metrics(path, 4);
    std::istringstream kept(read_text_file(path));
    for (std::string line; std::getline(kept, line);) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() || j["step"].get<int64_t>() > 4)
        fuzz::property_failed("truncate_metrics kept a line that is not a record of step <= 4: " + line);
    }
  });
  return 0;
}
