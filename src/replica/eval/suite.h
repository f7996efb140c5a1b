// An evaluation suite: which of the surfaces (eval/surface.h: held-out loss, domain perplexity, downstream tasks,
// KL against a reference model, needle-in-a-haystack retrieval) to run on which files, read from a YAML spec
// (docs/evaluation.md) or the default; results as one JSON object, a console table, and flat scalars for TensorBoard.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/data/tokenizer.h"
#include "replica/eval/needle.h"
#include "replica/eval/surface.h"
#include "replica/eval/tasks.h"
#include "replica/model/transformer.h"

namespace replica::eval {

// One section per surface; each surface reads and runs its own.
struct SuiteSpec {
  int64_t batch_tokens = 8192;  // padded tokens per forward
  struct Heldout {
    bool enabled = false;
    std::vector<data::MixEntry> files;
    int64_t seq_len = 0;   // truncation length; 0 = the model's max_position_embeddings
    int64_t max_docs = 0;  // per file; 0 = all
  } heldout;
  struct Perplexity {
    bool enabled = false;
    std::vector<data::MixEntry> files;
    int64_t window = 2048;  // Paloma's; capped at the model's context
    int64_t max_docs = 0;
  } perplexity;
  struct Tasks {
    bool enabled = false;
    TaskFormat format = TaskFormat::lm_eval;
    int64_t max_length = 0;  // left truncation; 0 = the model's max_position_embeddings
    std::vector<TaskSpec> list;
  } tasks;
  struct Kl {
    std::string reference;  // HF directory or checkpoint; empty = no KL surface
    std::vector<data::MixEntry> files;
    int64_t window = 512;
    int64_t max_positions = 1024;  // per file (compare_logits is O(V) in double per position)
  } kl;
  struct Needle {
    bool enabled = false;
    std::vector<data::MixEntry> files;  // the haystack text
    NeedleTask task;
  } needle;
};

// Token files from paths or glob patterns (a path ending in .mix is a mix file), labelled by stem, or by
// directory when stems repeat (data/tokens/<domain>/heldout.npy → <domain>).
std::vector<data::MixEntry> labelled_files(const std::vector<std::string>& patterns);
// The paths of `files`, in order (a surface's input_files).
std::vector<std::string> paths_of(const std::vector<data::MixEntry>& files);
// labelled_files of a suite section's `key` (its `files`), which must name at least one file.
std::vector<data::MixEntry> section_files(const std::vector<std::string>& patterns, const std::string& where,
                                          const std::string& key);

// Every task with a <task>.jsonl in `tasks_dir`, its shots drawn from <task>_<split>.jsonl there (fewshot_split()):
// mmlu 5-shot, the others 0-shot (lm-eval's defaults; OLMo reports MMLU 5-shot). A directory that does not exist or
// holds no task file raises replica::Error naming it.
std::vector<TaskSpec> tasks_in_dir(const std::string& tasks_dir);

// The built-in suites. "full": held-out loss and perplexity over every document of data/tokens/*/heldout.npy
// (scripts/fetch-data.sh), every task with a <task>.jsonl in `tasks_dir`, KL when `reference` is set. "default":
// the same surfaces capped to finish in minutes on the tiny model on 2 cores (docs/evaluation.md has the time):
// kDefaultHeldoutDocs documents per held-out file, kDefaultPerplexityDocs per perplexity domain,
// kDefaultTaskDocs per task.
constexpr int64_t kDefaultHeldoutDocs = 16, kDefaultPerplexityDocs = 2, kDefaultTaskDocs = 100;
bool is_builtin_suite(const std::string& name);
SuiteSpec builtin_suite(const std::string& name, const std::string& tasks_dir, const std::string& reference);

// --max-docs: at most `n` documents per held-out file, per perplexity domain and per task (lm-eval's --limit).
void cap_documents(SuiteSpec& spec, int64_t n);
// --num-fewshot: every task takes `n` shots.
void set_num_fewshot(SuiteSpec& spec, int64_t n);
// Reads a suite YAML file; unknown keys and bad values raise replica::Error naming the file and key.
SuiteSpec load_suite(const std::string& path);

// Each enabled surface's result, in the order of surfaces().
struct SuiteResults {
  struct Entry {
    std::string surface;  // Surface::name()
    std::unique_ptr<SurfaceResult> result;
  };
  std::vector<Entry> entries;
  nlohmann::json to_json() const;  // {"<surface>": {...}, ...}
};

// Runs every enabled surface. `tokenizer` is needed for perplexity (bytes) and tasks; `progress` sees every pass,
// a summary line per surface (per task), and each surface's result as it finishes.
SuiteResults run_suite(model::Transformer& model, model::WeightSource& weights, const SuiteSpec& spec,
                       const data::Tokenizer& tokenizer, Progress& progress);

// A readable table per surface of run_suite's result.
std::string format_results(const SuiteResults& results);
// Every number in the results' JSON (SuiteResults::to_json) as ("eval/<path>", value), for TensorBoard.
std::vector<std::pair<std::string, double>> flat_scalars(const nlohmann::json& results);

}  // namespace replica::eval
