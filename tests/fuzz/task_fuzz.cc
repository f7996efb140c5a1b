// Fuzzes the task JSONL readers: every task's fields in both prompt formats.
#include "fuzz_input.h"
#include "replica/eval/tasks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  if (size == 0) return 0;
  // The first byte picks the task and the format; the rest is the JSONL file (also the dev split for shots).
  const std::vector<std::string>& names = eval::task_names();
  eval::TaskSpec spec;
  spec.name = names[data[0] % names.size()];
  spec.path = fuzz::write_input("task.jsonl", data + 1, size - 1);
  if (spec.name == "mmlu") {
    spec.fewshot_path = spec.path;
    spec.num_fewshot = 2;
  }
  const eval::TaskFormat format = data[0] & 0x80 ? eval::TaskFormat::olmes : eval::TaskFormat::lm_eval;
  fuzz::expect_only_replica_errors([&] { eval::load_task(spec, format); });
  return 0;
}
