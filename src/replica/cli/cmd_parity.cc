// replica parity: KL(reference ‖ candidate), top-1 agreement, top-10 overlap and max |Δlogit| of two models
// (HF directories, replica checkpoints or logits .npy [B, T, V]) on the same tokens; exit 1 on a missed threshold.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "replica/ckpt/model_source.h"
#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/core/mapped_file.h"
#include "replica/core/npy.h"
#include "replica/core/threads.h"
#include "replica/eval/parity.h"
#include "replica/model/transformer.h"

namespace replica::cli {

namespace {

// Logits of one sequence at a time: computed by a model, or read from a .npy written by another framework.
class LogitSource {
 public:
  LogitSource(const std::string& path, Precision precision, int64_t B, int64_t T) : path_(path), T_(T) {
    if (std::filesystem::is_regular_file(path)) {
      npy_.emplace(path);
      header_ = parse_npy_header(npy_->data(), npy_->size(), path);
      check(header_.type == NpyType::f32 && header_.shape.size() == 3, "{}: logits must be float32 [B, T, V]", path);
      check(header_.shape[0] == B && header_.shape[1] == T,
            "{}: logits have shape [{}, {}, V], the tokens are [{}, {}]", path, header_.shape[0], header_.shape[1], B, T);
      V_ = header_.shape[2];
      check(npy_->size() >= header_.data_offset + size_t(B * T * V_) * 4, "{}: truncated logits file", path);
    } else {
      ckpt::HfModel m = ckpt::load_model_source(path);
      V_ = m.config.vocab_size;
      params_ = std::move(m.params);
      model_ = std::make_unique<model::Transformer>(m.config, precision, model::Remat::none, cpu_backend());
      buffer_.resize(size_t(T * V_));
    }
  }
  int64_t vocab() const { return V_; }
  const float* logits(const std::vector<int32_t>& ids, int64_t b) {
    if (npy_) return reinterpret_cast<const float*>(npy_->data() + header_.data_offset) + b * T_ * V_;
    model_->forward_logits(params_.data(), ids.data() + b * T_, 1, T_, buffer_.data());
    return buffer_.data();
  }

 private:
  std::string path_;
  int64_t T_, V_ = 0;
  std::optional<MappedFile> npy_;
  NpyHeader header_;
  std::vector<float> params_, buffer_;
  std::unique_ptr<model::Transformer> model_;
};

// The first V columns of logits [T, stride] (a padded vocabulary compared with a truncated one).
const float* first_columns(const float* logits, int64_t T, int64_t stride, int64_t V, std::vector<float>& out) {
  if (stride == V) return logits;
  out.resize(size_t(T * V));
  for (int64_t t = 0; t < T; t++) std::copy(logits + t * stride, logits + t * stride + V, out.begin() + t * V);
  return out.data();
}

}  // namespace

static Command parity_command(
    "parity", "Compare two models' logits on the same tokens: KL, top-1 agreement, top-10 overlap, max |Δlogit|",
    [](CLI::App& app) {
      struct Options {
        std::string reference, candidate, tokens, precision = "fp32", reference_precision = "fp32";
        double max_kl = -1.0, min_top1 = -1.0;
        bool json = false;
        int threads = 0;
      };
      auto o = std::make_shared<Options>();
      app.add_option("--reference", o->reference, "HF model directory, replica checkpoint, or logits .npy [B, T, V]")
          ->required();
      app.add_option("--candidate", o->candidate, "HF model directory, replica checkpoint, or logits .npy [B, T, V]")
          ->required();
      app.add_option("--tokens", o->tokens, ".npy of token ids, shape [B, T] or [T]")->required();
      app.add_option("--precision", o->precision, "candidate compute precision: fp32 or bf16");
      app.add_option("--reference-precision", o->reference_precision, "reference compute precision (default fp32)");
      app.add_option("--max-kl", o->max_kl, "fail (exit 1) when the mean KL in nats is above this");
      app.add_option("--min-top1", o->min_top1, "fail (exit 1) when top-1 agreement (a fraction) is below this");
      app.add_flag("--json", o->json, "print one JSON object");
      app.add_option("--threads", o->threads, "CPU threads (default: all)")
          ->check(CLI::Range(int64_t{0}, kMaxThreads));
      return std::function<int()>([o] {
        set_num_threads(o->threads);
        std::vector<int64_t> shape;
        const std::vector<int64_t> ids64 = read_npy_ids(o->tokens, &shape);
        check(shape.size() == 1 || shape.size() == 2, "{}: token ids must have shape [B, T] or [T]", o->tokens);
        const int64_t B = shape.size() == 2 ? shape[0] : 1, T = shape.back();
        std::vector<int32_t> ids(ids64.size());
        for (size_t i = 0; i < ids.size(); i++) {
          check(ids64[i] >= 0 && ids64[i] <= INT32_MAX, "{}: token id {} at index {} is negative or too large",
                o->tokens, ids64[i], i);
          ids[i] = int32_t(ids64[i]);
        }
        LogitSource ref(o->reference, parse_precision(o->reference_precision.c_str()), B, T);
        LogitSource cand(o->candidate, parse_precision(o->precision.c_str()), B, T);
        const int64_t V = std::min(ref.vocab(), cand.vocab());
        eval::ParityStats stats;
        std::vector<float> ref_cols, cand_cols;
        for (int64_t b = 0; b < B; b++) {
          const float* r = first_columns(ref.logits(ids, b), T, ref.vocab(), V, ref_cols);
          const float* c = first_columns(cand.logits(ids, b), T, cand.vocab(), V, cand_cols);
          stats += eval::compare_logits(r, c, T, V);
        }
        // Each bound given, as "KL mean 1e-06 <= --max-kl 0.001"; the verdict is PASS when every one holds.
        std::vector<std::string> held, failed;
        if (o->max_kl >= 0) {
          const bool over = stats.kl_mean() > o->max_kl;
          (over ? failed : held)
              .push_back(fmt::format("KL mean {:.6g} {} --max-kl {:.6g}", stats.kl_mean(), over ? ">" : "<=", o->max_kl));
        }
        if (o->min_top1 >= 0) {
          const bool under = stats.top1() < o->min_top1;
          (under ? failed : held)
              .push_back(fmt::format("top-1 {:.6g} {} --min-top1 {:.6g}", stats.top1(), under ? "<" : ">=", o->min_top1));
        }
        if (o->json) {
          nlohmann::json j = stats.to_json();
          j["reference"] = o->reference;
          j["candidate"] = o->candidate;
          j["precision"] = o->precision;
          j["vocab"] = V;
          j["pass"] = failed.empty();
          fmt::print("{}\n", j.dump());
        } else {
          fmt::print("parity: {} ({}) vs {} ({}): {} positions, vocab {}{}\n", o->reference, o->reference_precision,
                     o->candidate, o->precision, stats.positions, V,
                     ref.vocab() != cand.vocab() ? fmt::format(" (the shared prefix of {} and {})", ref.vocab(),
                                                               cand.vocab())
                                                 : "");
          fmt::print("  KL(ref || cand) mean {:.3e} nats, max {:.3e}\n", stats.kl_mean(), stats.kl_max);
          fmt::print("  top-1 agreement {:.2f} %, top-10 overlap {:.2f} %, max |dlogit| {:.4g}\n", 100 * stats.top1(),
                     100 * stats.top10(), stats.max_abs_logit_diff);
          if (!failed.empty())
            fmt::print("FAIL: {}\n", fmt::join(failed, "; "));
          else if (!held.empty())
            fmt::print("PASS: {}\n", fmt::join(held, "; "));
        }
        return failed.empty() ? 0 : 1;
      });
    });

}  // namespace replica::cli
