// replica eval: held-out loss, domain perplexity, downstream tasks and KL against a reference, on demand.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>

#include "replica/cli/command.h"
#include "replica/core/threads.h"
#include "replica/ckpt/model_source.h"
#include "replica/eval/suite.h"

namespace replica::cli {

static Command eval_command(
    "eval", "Evaluate a model: held-out loss, domain perplexity + bits/byte, lm-eval tasks, KL vs a reference",
    [](CLI::App& app) {
      struct Options {
        std::string model, suite = "default", reference, tasks_dir, tokenizer, precision = "fp32", device = "cpu";
        bool json = false;
        int threads = 0;
        int64_t batch_tokens = 0;
      };
      auto o = std::make_shared<Options>();
      app.add_option("--model", o->model, "HF model directory, replica checkpoint, or run directory (its latest checkpoint)")->required();
      app.add_option("--suite", o->suite, "default, or a suite YAML (docs/evaluation.md)");
      app.add_option("--reference", o->reference, "reference model (HF dir or checkpoint) for the KL surface");
      app.add_option("--tasks-dir", o->tasks_dir,
                     "default suite: directory of <task>.jsonl exports (default data/eval, else tests/fixtures/eval)");
      app.add_option("--tokenizer", o->tokenizer, "cl100k_base.tiktoken ranks (default: the usual search path)");
      app.add_option("--precision", o->precision, "fp32 or bf16 (bf16 matmul operands, fp32 accumulate)");
      app.add_option("--batch-tokens", o->batch_tokens, "padded tokens per forward (default: the suite's, 8192)")
          ->check(CLI::NonNegativeNumber);
      app.add_option("--threads", o->threads, "CPU threads (default: all)")
          ->check(CLI::Range(int64_t{0}, kMaxThreads));
      app.add_option("--device", o->device, "cpu or cuda");
      app.add_flag("--json", o->json, "print the results as one JSON object instead of tables");
      return std::function<int()>([o] {
        set_num_threads(o->threads);
        const auto start = std::chrono::steady_clock::now();
        std::string tasks_dir = o->tasks_dir;
        if (tasks_dir.empty()) tasks_dir = std::filesystem::exists("data/eval") ? "data/eval" : "tests/fixtures/eval";
        eval::SuiteSpec spec =
            o->suite == "default" ? eval::default_suite(tasks_dir, o->reference) : eval::load_suite(o->suite);
        if (!o->reference.empty()) {
          spec.kl.reference = o->reference;
          if (spec.kl.files.empty()) spec.kl.files = spec.perplexity.enabled ? spec.perplexity.files : spec.heldout.files;
        }
        if (o->batch_tokens > 0) spec.batch_tokens = o->batch_tokens;
        ckpt::HfModel hf = ckpt::load_model_source(o->model);
        Backend& backend = backend_for(parse_device(o->device));
        model::Transformer model(hf.config, parse_precision(o->precision.c_str()), model::Remat::none, backend);
        data::Tokenizer tokenizer = data::Tokenizer::load(o->tokenizer.empty() ? data::default_ranks_path() : o->tokenizer);
        auto log = [](const std::string& line) { fmt::print(stderr, "eval: {}\n", line); };
        const OnBackend params(backend, hf.params);
        const eval::SuiteResults results =
            eval::run_suite(model, model.whole_weights(params.data()), spec, tokenizer, log);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (o->json) {
          nlohmann::json j = results.to_json();
          j["model"] = o->model;
          j["seconds"] = seconds;
          fmt::print("{}\n", j.dump());
        } else {
          fmt::print("replica eval {} ({}, {:.1f} s)\n{}", o->model, o->precision, seconds, eval::format_results(results));
        }
        return 0;
      });
    });

}  // namespace replica::cli
