// replica reproduce: a candidate checkpoint series against a reference series, pair by pair (KL, top-1, max |Δlogit|
// and the suite's surfaces), with a verdict: tracking, drifting, or diverged at step N. Exit 0 when tracking or
// drifting, 1 when diverged, 2 on bad input. docs/reproduce.md.
#include <fmt/core.h>

#include <filesystem>
#include <memory>

#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/output_guard.h"
#include "replica/core/parse_number.h"
#include "replica/core/threads.h"
#include "replica/reproduce/reproduce.h"
#include "replica/reproduce/reproduction_json.h"
#include "replica/reproduce/reproduction_page.h"

namespace replica::cli {

namespace {

// "1000,2000,5000" → steps.
std::vector<int64_t> parse_steps(const std::string& text) {
  std::vector<int64_t> steps;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::optional<int64_t> step = parse_int64(std::string_view(text).substr(start, end - start));
    check(step && *step >= 0, "--steps: '{}' is not a comma-separated list of steps", text);
    steps.push_back(*step);
    start = end + 1;
  }
  return steps;
}

}  // namespace

static Command reproduce_command(
    "reproduce",
    "Hold a checkpoint series against a reference series step by step: KL, top-1, surfaces, and a verdict",
    [](CLI::App& app) {
      struct Options {
        reproduce::ReproduceOptions r;
        std::string json, steps, pair_by = "auto";
        int threads = 0;
      };
      auto o = std::make_shared<Options>();
      reproduce::ReproduceOptions& r = o->r;
      reproduce::Bounds& b = r.bounds;
      app.add_option("--run", r.run, "candidate series: run directory, directory of stage1-stepN HF dirs, or CSV")
          ->required();
      app.add_option("--reference", r.reference, "reference series (the same kinds)")->required();
      app.add_option("--out", r.out, "directory for the evaluation cache and reproduction.html")->required();
      app.add_option("--tokens", r.tokens, "token ids .npy [B, T] for the KL (default: cut from the suite's held-out)");
      app.add_option("--kl-sequences", r.kl_sequences, "sequences cut from the held-out file without --tokens (4)")
          ->check(positive_number);
      app.add_option("--kl-length", r.kl_length, "their length in tokens (256, capped at the context)")
          ->check(positive_number);
      app.add_option("--suite", r.suite, "default, full, or a suite YAML (docs/evaluation.md)");
      app.add_option("--max-docs", r.max_docs, "at most N documents per held-out file, perplexity domain and task");
      app.add_option("--tasks-dir", r.tasks_dir, "built-in suites: directory of <task>.jsonl exports");
      app.add_option("--tokenizer", r.tokenizer, "cl100k_base.tiktoken ranks (default: the usual search path)");
      app.add_option("--json", o->json, "write the reproduction as JSON to this file (docs/reproduce.md: the schema)");
      app.add_option("--steps", o->steps, "only these candidate steps, comma-separated");
      app.add_option("--stage", r.stage, "the stage to read where a series spans several (stage1, stage2-ingredient1)");
      app.add_option("--pair-by", o->pair_by, "auto (by tokens when tokens per step differ), step, or tokens");
      app.add_option("--precision", r.precision, "fp32 or bf16");
      app.add_option("--device", r.device, "cpu or cuda");
      app.add_option("--weights", r.weights,
                     "auto, resident (a whole model in memory) or streamed (read a layer at a time from its files)");
      app.add_option("--memory-limit", r.memory_limit_gib,
                     "GiB --weights auto plans against (default: this machine's or container's memory)")
          ->check(positive_number);
      app.add_option("--threads", o->threads, "CPU threads (default: one per free core)")->check(CLI::Range(int64_t{0}, kMaxThreads));
      app.add_option("--max-kl", b.kl, "bound on the mean KL(reference || candidate), nats (0.01)");
      app.add_option("--max-loss-delta", b.loss, "bound on |Δ held-out loss|, nats (0.01)");
      app.add_option("--max-bpb-delta", b.bits_per_byte, "bound on |Δ bits per byte| (0.01)");
      app.add_option("--max-task-delta", b.task, "bound on |Δ task metric| (0.05)");
      app.add_option("--max-needle-delta", b.needle, "bound on |Δ needle accuracy| (0.1)");
      app.add_option("--drift-window", b.drift_window, "pairs over which a rising bound use is drifting (3)")
          ->check(CLI::Range(int64_t{2}, int64_t{1000}));
      app.add_option("--drift-fraction", b.drift_fraction, "bound use a rising window must reach to drift (0.5)");
      return std::function<int()>([o] {
        // --out is the evaluation cache, kept between runs; the JSON file replaces whatever it names.
        if (!o->json.empty()) check_output_path("--json", o->json, {o->r.run, o->r.reference, o->r.tokens, o->r.suite});
        set_num_threads(o->threads);
        o->r.pair_by = reproduce::parse_pair_by(o->pair_by);
        if (!o->steps.empty()) o->r.steps = parse_steps(o->steps);
        const reproduce::Reproduction result =
            reproduce::reproduce(o->r, [](const std::string& line) { fmt::print("{}\n", line), std::fflush(stdout); });
        fmt::print("{}", reproduce::format_reproduction(result));
        const std::string page = (std::filesystem::path(o->r.out) / "reproduction.html").string();
        write_text_file_atomic(page, reproduce::render_reproduction_page(result));
        fmt::print("page: {}\n", page);
        if (!o->json.empty()) {
          write_text_file_atomic(o->json, reproduce::reproduction_json(result).dump(2) + "\n");
          fmt::print("json: {}\n", o->json);
        }
        return result.verdict.diverged_at ? 1 : 0;
      });
    });

}  // namespace replica::cli
