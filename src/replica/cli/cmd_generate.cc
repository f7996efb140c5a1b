// replica generate: a model continues a prompt. dolma2 encoding, a prefill and then one token at a time with a KV
// cache (model/generation.h), the text streamed to stdout as it comes; the speed goes to stderr.
#include <fmt/core.h>

#include <cstdio>

#include "replica/ckpt/model_source.h"
#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/threads.h"
#include "replica/data/tokenizer.h"
#include "replica/model/generation.h"

namespace replica::cli {

static Command generate_command(
    "generate", "Continue a prompt with a model (HF directory, checkpoint or run directory), streamed",
    [](CLI::App& app) {
      struct Options {
        std::string model, prompt, tokenizer, precision = "fp32", device = "cpu", attention;
        int64_t max_new_tokens = 64;
        model::SamplingConfig sampling;
        int threads = 0;
      };
      auto o = std::make_shared<Options>();
      app.add_option("--model", o->model,
                     "HF model directory, replica checkpoint, or run directory (its latest checkpoint)")
          ->required();
      app.add_option("--prompt", o->prompt, "Text to continue (dolma2-encoded as ordinary text, no BOS)")->required();
      app.add_option("--max-new-tokens", o->max_new_tokens, "Stop after this many new tokens (or at EOS)")
          ->capture_default_str();
      app.add_option("--temperature", o->sampling.temperature, "0: greedy; > 0: sample from softmax(logits / T)")
          ->capture_default_str();
      app.add_option("--top-k", o->sampling.top_k, "Sample among the k most probable tokens (0: all)")
          ->capture_default_str();
      app.add_option("--top-p", o->sampling.top_p, "Sample within the smallest set of mass ≥ p (1: all)")
          ->capture_default_str();
      app.add_option("--seed", o->sampling.seed, "Sampling seed: the same seed gives the same text")
          ->capture_default_str();
      app.add_option("--device", o->device, "cpu or cuda")->capture_default_str();
      app.add_option("--precision", o->precision, "fp32 or bf16 (bf16 matmul operands, fp32 accumulate)")
          ->capture_default_str();
      app.add_option("--attention", o->attention,
                     "auto, mma, wgmma or fp32 (default: on cuda the kernel the checkpoint's run recorded)");
      app.add_option("--threads", o->threads, "CPU threads (default: one per free core)");
      app.add_option("--tokenizer", o->tokenizer, "cl100k_base.tiktoken (default: data/tokenizer/)");
      return std::function<int()>([o] {
        check(!o->prompt.empty(), "--prompt is empty: give the text to continue");
        check(o->max_new_tokens >= 0, "--max-new-tokens must be ≥ 0, got {}", o->max_new_tokens);
        o->sampling.validate();
        if (const std::string threads = set_num_threads(o->threads); !threads.empty())
          fmt::print(stderr, "threads: {} (--threads N to choose)\n", threads);
        const Precision precision = parse_precision(o->precision.c_str());
        const Device device = parse_device(o->device);
        Backend& backend = backend_for(device);
        const data::Tokenizer tokenizer =
            data::Tokenizer::load(o->tokenizer.empty() ? data::default_ranks_path() : o->tokenizer);
        const std::string source = ckpt::resolve_model_source(o->model);
        const ckpt::HfModel hf = ckpt::load_model_source(source);
        check(hf.config.vocab_size >= int64_t(tokenizer.vocab_size()),
              "{}: a vocabulary of {} ids cannot hold dolma2's {} (generate needs a model of dolma2 token ids)", source,
              hf.config.vocab_size, tokenizer.vocab_size());

        // Only ids below the tokenizer's vocabulary are sampled (vocab_limit): an EOS above it could never end the
        // text (reliability review, case 76: an id inside int32 but outside the vocabulary loaded and never stopped).
        check(hf.config.eos_token_id < int64_t(tokenizer.vocab_size()),
              "{}: eos_token_id is {}, not an id generate can produce (dolma2's are 0 to {}): the text could never "
              "end at it", source, hf.config.eos_token_id, tokenizer.vocab_size() - 1);
        const std::vector<int32_t> prompt = tokenizer.encode_model_input(o->prompt);
        model::GenerationConfig config;
        config.max_new_tokens = o->max_new_tokens;
        config.eos = int32_t(hf.config.eos_token_id);
        config.vocab_limit = tokenizer.vocab_size();
        config.sampling = o->sampling;
        const OnBackend weights(backend, hf.params);
        model::Decoder decoder(hf.config, weights.data(), precision,
                               model::generation_positions(int64_t(prompt.size()), o->max_new_tokens), backend,
                               o->attention.empty() ? ckpt::recorded_attention(source, device)
                                                    : parse_attention_kernel(o->attention));

        fmt::print(stderr, "{}: {} prompt tokens, {:.1f} MiB KV cache, {}\n", source, prompt.size(),
                   double(decoder.cache().bytes()) / double(1 << 20),
                   o->sampling.temperature == 0.0
                       ? std::string("greedy")
                       : fmt::format("temperature {}, top-k {}, top-p {}, seed {}", o->sampling.temperature,
                                     o->sampling.top_k, o->sampling.top_p, o->sampling.seed));
        std::fwrite(o->prompt.data(), 1, o->prompt.size(), stdout);
        flush_stdout();
        const model::GenerationResult result = model::generate(decoder, prompt, config, [&](int32_t id) {
          if (config.eos && id == *config.eos) return;  // the end of the text, not part of it
          const std::string_view bytes = tokenizer.token_bytes(uint32_t(id));
          std::fwrite(bytes.data(), 1, bytes.size(), stdout);
          flush_stdout();  // a closed pipe or a full disk stops the generation, with exit 2
        });
        std::fputc('\n', stdout);
        flush_stdout();
        const double seconds = result.prefill_seconds + result.decode_seconds;
        fmt::print(stderr, "{} new tokens{} in {:.2f} s, {:.1f} tokens/s (prompt: {} tokens in {:.3f} s)\n",
                   result.ids.size(), result.stopped_at_eos ? " (stopped at EOS)" : "", seconds,
                   seconds > 0 ? double(result.ids.size()) / seconds : 0.0, prompt.size(), result.prefill_seconds);
        return 0;
      });
    });

}  // namespace replica::cli
