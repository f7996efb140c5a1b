// replica forward: logits of a model (HF directory or replica checkpoint) on token ids (.npy) — the parity hook.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "replica/ckpt/model_source.h"
#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/core/mapped_file.h"
#include "replica/core/npy.h"
#include "replica/core/output_guard.h"
#include "replica/core/threads.h"
#include "replica/data/token_file.h"
#include "replica/model/transformer.h"

namespace replica::cli {

// Token ids [B, T]: a .npy of any integer type, shape [B, T] or [T]; or, with seq_len, a token file as `replica data
// tokenize` writes it (headerless or .npy, uint32 or uint16) cut into rows of seq_len (a shorter tail is dropped).
static std::vector<int64_t> read_token_rows(const std::string& path, int64_t seq_len, const std::string& dtype,
                                            std::vector<int64_t>& shape) {
  if (seq_len == 0) {
    const MappedFile file(path);
    check(has_npy_magic(file.data(), file.size()),
          "{}: not a .npy file; for a headerless token file (replica data tokenize) give --seq-len T", path);
    std::vector<int64_t> ids = read_npy_ids(path, &shape);
    check(shape.size() == 1 || shape.size() == 2, "{}: token ids must have shape [B, T] or [T], got {} dims", path,
          shape.size());
    if (shape.size() == 1) shape.insert(shape.begin(), 1);
    return ids;
  }
  check(seq_len > 0, "--seq-len must be positive, got {}", seq_len);
  const data::TokenFile file(path, data::parse_token_dtype(dtype));
  const int64_t rows = int64_t(file.num_tokens() / uint64_t(seq_len));
  check(rows > 0, "{}: {} tokens are fewer than one row of --seq-len {}", path, file.num_tokens(), seq_len);
  shape = {rows, seq_len};
  std::vector<int64_t> ids(size_t(rows * seq_len));
  for (size_t i = 0; i < ids.size(); i++) ids[i] = file.at(i);
  return ids;
}

static Command forward_command(
    "forward", "Write the logits [B, T, V] of a model on token ids (.npy [B, T])", [](CLI::App& app) {
      struct Options {
        std::string model, tokens, out, precision = "fp32", device = "cpu", dtype = "uint32";
        int threads = 0;
        int64_t seq_len = 0;
      };
      auto o = std::make_shared<Options>();
      app.add_option("--model", o->model, "HF model directory (config.json + safetensors), replica checkpoint, or run directory (its latest checkpoint)")
          ->required();
      app.add_option("--tokens", o->tokens,
                     ".npy of int32/int64/uint32 token ids, shape [B, T] or [T]; with --seq-len, a token file")
          ->required();
      app.add_option("--seq-len", o->seq_len,
                     "read --tokens as a token file (headerless, as `replica data tokenize` writes, or .npy) in rows of "
                     "T tokens");
      app.add_option("--dtype", o->dtype, "element type of a headerless token file (uint32 or uint16)")
          ->capture_default_str();
      app.add_option("--out", o->out, "output .npy, float32 [B, T, V]")->required();
      app.add_option("--precision", o->precision, "fp32 or bf16 (bf16 matmul operands, fp32 accumulate)");
      app.add_option("--threads", o->threads, "CPU threads (default: one per free core)")
          ->check(CLI::Range(int64_t{0}, kMaxThreads));
      app.add_option("--device", o->device, "cpu or cuda");
      return std::function<int()>([o] {
        check_output_path("--out", o->out, {o->model, o->tokens});
        set_num_threads(o->threads);
        Precision precision = parse_precision(o->precision.c_str());
        Backend& backend = backend_for(parse_device(o->device));
        ckpt::HfModel hf = ckpt::load_model_source(o->model);
        std::vector<int64_t> shape;
        std::vector<int64_t> ids64 = read_token_rows(o->tokens, o->seq_len, o->dtype, shape);
        const int64_t B = shape[0], T = shape[1];
        std::vector<int32_t> ids(ids64.size());
        for (size_t i = 0; i < ids.size(); i++) {
          check(ids64[i] >= 0 && ids64[i] < hf.config.vocab_size, "{}: token id {} at index {} is outside [0, {})",
                o->tokens, ids64[i], i, hf.config.vocab_size);
          ids[i] = int32_t(ids64[i]);
        }
        model::Transformer model(hf.config, precision, model::Remat::none, backend);
        std::vector<float> logits(size_t(B * T * hf.config.vocab_size));
        model.forward_logits(OnBackend(backend, hf.params).data(), ids.data(), B, T, logits.data());
        // Finite weights and ids give finite logits; anything else is a damaged model, refused as eval does.
        const auto bad = std::count_if(logits.begin(), logits.end(), [](float x) { return !std::isfinite(x); });
        check(bad == 0, "{}: {} of the {} logits are NaN or infinite: the model's weights are not finite", o->model,
              bad, logits.size());
        write_npy(o->out, NpyType::f32, {B, T, hf.config.vocab_size}, logits.data());
        fmt::print("wrote {} logits [{}, {}, {}] ({})\n", o->out, B, T, hf.config.vocab_size, o->precision);
        return 0;
      });
    });

}  // namespace replica::cli
