// replica export-hf: a replica checkpoint (or an HF directory) → a Hugging Face model directory, with the dolma2
// tokenizer files when the model uses dolma2's vocabulary.
#include <fmt/core.h>

#include "replica/ckpt/model_source.h"
#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/core/output_guard.h"
#include "replica/data/hf_tokenizer.h"

namespace replica::cli {

// A model exported with at least dolma2's 100,278 rows and its EOS and pad ids reads dolma2 token ids; a smaller
// vocabulary (the tests' toy models) has no tokenizer to ship.
static bool uses_dolma2(const model::ModelConfig& config, int64_t exported_vocab) {
  return exported_vocab >= data::kDolma2VocabSize && config.eos_token_id == data::kDolma2Eos &&
         config.pad_token_id == data::kDolma2Pad;
}

static Command export_hf_command(
    "export-hf",
    "Write a checkpoint as a Hugging Face model directory (config.json, generation_config.json, safetensors and, "
    "for a dolma2 vocabulary, the tokenizer files)",
    [](CLI::App& app) {
      struct Options {
        std::string checkpoint, out, dtype = "fp32", tokenizer;
        int64_t vocab = 0;
        double max_shard_gb = 5.0;
      };
      auto o = std::make_shared<Options>();
      app.add_option("--checkpoint", o->checkpoint, "replica checkpoint, run directory (its latest checkpoint) or HF model directory")
          ->required();
      app.add_option("--out", o->out, "output directory (must not exist or be empty)")->required();
      app.add_option("--dtype", o->dtype, "fp32 or bf16 (round to nearest even)");
      app.add_option("--vocab", o->vocab, "keep the first VOCAB rows of the embedding and LM head (OLMo 3: 100278)");
      app.add_option("--max-shard-gb", o->max_shard_gb, "shard the weights above this size (GB, default 5)");
      app.add_option("--tokenizer", o->tokenizer,
                     "cl100k_base.tiktoken for the tokenizer files (default: data/tokenizer/)");
      return std::function<int()>([o] {
        check(o->dtype == "fp32" || o->dtype == "bf16", "--dtype must be fp32 or bf16, got '{}'", o->dtype);
        check(o->vocab >= 0 && o->max_shard_gb > 0, "--vocab must be >= 0 and --max-shard-gb positive");
        check_output_path("--out", o->out, {o->checkpoint, o->tokenizer}, OutputKind::directory);
        const ckpt::HfModel model = ckpt::load_model_source(o->checkpoint);
        ckpt::HfExportOptions options;
        options.dtype = o->dtype == "fp32" ? ckpt::StDtype::F32 : ckpt::StDtype::BF16;
        options.vocab = o->vocab;
        options.max_shard_bytes = uint64_t(o->max_shard_gb * 1e9);
        const int64_t vocab = o->vocab > 0 ? o->vocab : model.config.vocab_size;
        const bool tokenizer = uses_dolma2(model.config, vocab);
        if (tokenizer) {
          const std::string ranks = o->tokenizer.empty() ? data::default_ranks_path() : o->tokenizer;
          options.extra_files = data::hf_tokenizer_files(data::Tokenizer::load(ranks), model.config.max_seq_len);
        }
        ckpt::export_hf(model.config, model::ParamTable(model.config), model.params.data(), o->out, options);
        fmt::print("wrote {} ({}, vocab {}, {})\n", o->out, o->dtype, vocab,
                   tokenizer ? "dolma2 tokenizer files" : "no tokenizer files: not dolma2's vocabulary");
        return 0;
      });
    });

}  // namespace replica::cli
