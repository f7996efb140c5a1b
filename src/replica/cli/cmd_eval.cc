// replica eval: held-out loss, domain perplexity, downstream tasks and KL against a reference, on demand; progress
// on stderr, each surface's table on stdout as it finishes.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "replica/ckpt/model_source.h"
#include "replica/cli/command.h"
#include "replica/cli/eval_progress.h"
#include "replica/core/error.h"
#include "replica/core/threads.h"
#include "replica/eval/suite.h"

namespace replica::cli {

// The KL surface runs last: a reference it cannot use is named before any surface runs, not after all of them.
static void check_reference(const std::string& reference, const model::ModelConfig& model) {
  const model::ModelConfig ref = ckpt::load_model_source_config(ckpt::resolve_model_source(reference));
  check(ref.eos_token_id == model.eos_token_id,
        "--reference {}: its eos_token_id is {}, the model's {} (KL compares "
        "the two models on the same documents)",
        reference, ref.eos_token_id, model.eos_token_id);
  const int64_t shared = std::min(ref.vocab_size, model.vocab_size);
  check(model.eos_token_id < shared,
        "--reference {}: the models share {} ids, which do not hold the EOS id {} that "
        "ends every document of the token files",
        reference, shared, model.eos_token_id);
}

static Command eval_command(
    "eval", "Evaluate a model: held-out loss, domain perplexity + bits/byte, lm-eval tasks, KL vs a reference",
    [](CLI::App& app) {
      struct Options {
        std::string model, suite = "default", reference, tasks_dir, tokenizer, precision = "fp32", device = "cpu",
                    attention;
        bool json = false;
        int threads = 0;
        int64_t batch_tokens = 0;
        std::optional<int64_t> max_docs, num_fewshot;
      };
      auto o = std::make_shared<Options>();
      app.add_option("--model", o->model, "HF model directory, replica checkpoint, or run directory (its latest checkpoint)")->required();
      app.add_option("--suite", o->suite,
                     "default (capped to finish in minutes), full (every held-out document), or a suite YAML "
                     "(docs/evaluation.md)");
      app.add_option("--max-docs,--limit", o->max_docs,
                     "at most N documents per held-out file, per perplexity domain and per task");
      app.add_option("--num-fewshot", o->num_fewshot, "shots for every task (lm-eval sampling, random.Random(1234))");
      app.add_option("--reference", o->reference, "reference model (HF dir or checkpoint) for the KL surface");
      app.add_option("--tasks-dir", o->tasks_dir,
                     "built-in suites: directory of <task>.jsonl exports (default data/eval, else "
                     "tests/fixtures/eval)");
      app.add_option("--tokenizer", o->tokenizer, "cl100k_base.tiktoken ranks (default: the usual search path)");
      app.add_option("--precision", o->precision, "fp32 or bf16 (bf16 matmul operands, fp32 accumulate)");
      app.add_option("--batch-tokens", o->batch_tokens, "padded tokens per forward (default: the suite's, 8192)")
          ->check(non_negative_number);
      app.add_option("--threads", o->threads, "CPU threads (default: one per free core)")
          ->check(CLI::Range(int64_t{0}, kMaxThreads));
      app.add_option("--device", o->device, "cpu or cuda");
      app.add_option("--attention", o->attention,
                     "auto, mma, wgmma or fp32 (default: on cuda the kernel the checkpoint's run recorded)");
      app.add_flag("--json", o->json, "print the results as one JSON object instead of tables");
      return std::function<int()>([o] {
        if (const std::string threads = set_num_threads(o->threads); !threads.empty())
          fmt::print(stderr, "threads: {} (--threads N to choose)\n", threads);
        const auto start = std::chrono::steady_clock::now();
        // --tasks-dir given: it must hold tasks (eval/suite.h). Not given: data/eval, else the test fixtures, else
        // no tasks.
        std::string tasks_dir = o->tasks_dir;
        if (tasks_dir.empty())
          for (const char* dir : {"data/eval", "tests/fixtures/eval"})
            if (tasks_dir.empty() && std::filesystem::is_directory(dir)) tasks_dir = dir;
        eval::SuiteSpec spec = eval::is_builtin_suite(o->suite) ? eval::builtin_suite(o->suite, tasks_dir, o->reference)
                                                                : eval::load_suite(o->suite);
        if (!o->reference.empty()) {
          spec.kl.reference = o->reference;
          if (spec.kl.files.empty()) spec.kl.files = spec.perplexity.enabled ? spec.perplexity.files : spec.heldout.files;
        }
        if (o->batch_tokens > 0) spec.batch_tokens = o->batch_tokens;
        if (o->max_docs) eval::cap_documents(spec, *o->max_docs);
        if (o->num_fewshot) eval::set_num_fewshot(spec, *o->num_fewshot);
        ckpt::HfModel hf = ckpt::load_model_source(o->model);
        if (!spec.kl.reference.empty()) check_reference(spec.kl.reference, hf.config);
        const Device device = parse_device(o->device);
        Backend& backend = backend_for(device);
        model::Transformer model(hf.config, parse_precision(o->precision.c_str()), model::Remat::none, backend);
        model.use_attention(o->attention.empty()
                                ? ckpt::recorded_attention(ckpt::resolve_model_source(o->model), device)
                                : parse_attention_kernel(o->attention));
        data::Tokenizer tokenizer = data::Tokenizer::load(o->tokenizer.empty() ? data::default_ranks_path() : o->tokenizer);
        EvalConsole console(o->json);
        if (eval::is_builtin_suite(o->suite) && tasks_dir == "tests/fixtures/eval" && spec.tasks.enabled)
          console.line("tasks come from the TEST FIXTURES in tests/fixtures/eval (2-3 documents per task): put lm-eval "
                       "exports in data/eval or pass --tasks-dir for real scores");
        if (!o->json) fmt::print("replica eval {} ({}, suite {})\n", o->model, o->precision, o->suite);
        const OnBackend params(backend, hf.params);
        auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
        std::optional<EvalInterrupted> interrupted;
        auto print_json = [&](const char* key, const std::string& value) {
          nlohmann::json j = console.results();
          j["model"] = o->model;
          j["seconds"] = seconds();
          if (key) j[key] = value;
          fmt::print("{}\n", j.dump());
        };
        try {
          eval::run_suite(model, model.whole_weights(params.data()), spec, tokenizer, console);
        } catch (const EvalInterrupted& stop) {
          interrupted = stop;
        } catch (const std::exception& e) {
          if (o->json) print_json("error", e.what());  // the surfaces that finished are kept; exit 2 all the same
          throw;
        }
        if (o->json) print_json(interrupted ? "interrupted" : nullptr, interrupted ? interrupted->during : "");
        if (interrupted) {
          console.line(fmt::format("stopped by a signal during {} after {:.1f} s; the surfaces printed above finished",
                                   interrupted->during, seconds()));
          return 130;
        }
        console.line(fmt::format("done in {:.1f} s", seconds()));
        return 0;
      });
    });

}  // namespace replica::cli
