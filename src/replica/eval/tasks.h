// Downstream multiple-choice tasks read from the JSONL that Hugging Face `datasets` exports (Dataset.to_json),
// rendered into (context, continuation) requests exactly as lm-evaluation-harness (v0.4.9.2) does (prompts, " " +
// choice continuations, HellaSwag preprocessing, WinoGrande partial scoring, MMLU subject header and first-n dev
// shots, the other tasks' shots drawn from their training split with random.Random(1234)), or as OLMo's in-loop
// OLMES RC formats. Scoring lives in task_scoring.h.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace replica::eval {

enum class TaskFormat { lm_eval, olmes };
TaskFormat parse_task_format(const std::string& name);  // "lm-eval" | "olmes"
const char* task_format_name(TaskFormat f);

struct Request {
  std::string context, continuation;
};

// One question: one request per choice (WinoGrande: one context per option, the same continuation).
struct TaskDoc {
  std::vector<Request> requests;
  std::vector<std::string> choices;  // lm-eval acc_norm divides by len(choice) in code points
  int64_t gold = 0;
};

struct TaskSpec {
  std::string name;          // arc_easy | arc_challenge | hellaswag | piqa | boolq | openbookqa | winogrande | mmlu
  std::string path;          // JSONL of the evaluation split
  std::string fewshot_path;  // JSONL of the split shots come from (fewshot_split(name)); read when num_fewshot > 0
  int64_t num_fewshot = 0;   // lm-eval's default is 0
  int64_t limit = 0;         // first `limit` documents (0 = all)
};

struct Task {
  std::string name;
  TaskFormat format;
  std::vector<std::string> metrics;  // what lm-eval reports for it: {"acc"} or {"acc", "acc_norm"}
  std::vector<TaskDoc> docs;
};

// Reads and renders a task. Missing files, malformed JSON and missing or mistyped fields raise
// replica::Error naming file:line and the field.
Task load_task(const TaskSpec& spec, TaskFormat format);

// The eight task names, in report order.
const std::vector<std::string>& task_names();

// The split lm-eval draws a task's shots from: "dev" for mmlu (its first n per subject), "train" for the others
// (ContextSampler: random.Random(1234).sample over the whole split, one draw per document in order).
const char* fewshot_split(const std::string& task);

// lm_eval/tasks/hellaswag/utils.py preprocess: strip, " [title]" → ". ", re.sub("\\[.*?\\]", ""), "  " → " ".
std::string hellaswag_preprocess(std::string_view text);

}  // namespace replica::eval
