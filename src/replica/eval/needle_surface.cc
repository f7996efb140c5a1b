// The needle-in-a-haystack surface (eval/needle.h): retrieval accuracy and mean rank per context length and depth.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "replica/core/config_fields.h"
#include "replica/core/error.h"
#include "replica/eval/needle.h"
#include "replica/eval/suite.h"

namespace replica::eval {
namespace {

struct NeedleSurfaceResult final : SurfaceResult {
  NeedleTask task;      // as run: lengths filled in
  int64_t context = 0;  // the model's max_position_embeddings
  std::vector<NeedleCell> cells;

  // A depth as a JSON key and a column heading: 0.25 → "0.25".
  static std::string depth_key(double depth) { return fmt::format("{:g}", depth); }

  nlohmann::json to_json() const override {
    nlohmann::json lengths = nlohmann::json::object();
    std::map<int64_t, std::pair<double, double>> per_length;  // Σ accuracy, Σ mean rank over its depths
    for (const NeedleCell& c : cells) {
      lengths[std::to_string(c.length)][depth_key(c.depth)] = {{"accuracy", c.accuracy}, {"mean_rank", c.mean_rank}};
      per_length[c.length].first += c.accuracy;
      per_length[c.length].second += c.mean_rank;
    }
    const double depths = double(task.depths.size());
    for (const auto& [length, sums] : per_length)
      lengths[std::to_string(length)]["all"] = {{"accuracy", sums.first / depths}, {"mean_rank", sums.second / depths}};
    return {{"trials", task.trials},
            {"distractors", task.distractors},
            {"seed", task.seed},
            {"extrapolate", task.extrapolate},
            {"lengths", lengths}};
  }

  std::string format() const override {
    std::string s = fmt::format(
        "needle in a haystack (the needle's value ranked among {} candidates, {} trials per cell: "
        "accuracy / mean rank)\n  {:>8}",
        task.distractors + 1, task.trials, "length");
    for (double d : task.depths) s += fmt::format("  {:>13}", "depth " + depth_key(d));
    for (size_t i = 0; i < cells.size(); i++) {
      if (i % task.depths.size() == 0)
        s += fmt::format("\n  {:>8}", fmt::format("{}{}", cells[i].length, cells[i].length > context ? "*" : ""));
      s += fmt::format("  {:>5.3f} / {:>5.2f}", cells[i].accuracy, cells[i].mean_rank);
    }
    const bool beyond =
        std::any_of(cells.begin(), cells.end(), [&](const NeedleCell& c) { return c.length > context; });
    if (beyond) s += fmt::format("\n  * beyond the model's {} positions (needle.extrapolate)", context);
    return s + "\n";
  }
};

class NeedleSurface final : public Surface {
 public:
  const char* name() const override { return "needle"; }

  void parse(const YAML::Node& section, const std::string& where, SuiteSpec& spec) const override {
    SuiteSpec::Needle& n = spec.needle;
    NeedleTask& t = n.task;
    std::vector<std::string> files;
    config::read_mapping(
        section, "needle.",
        {config::list("needle.files", files, "a list of token files"),
         config::list("needle.lengths", t.lengths, "a list of token counts"),
         config::list("needle.depths", t.depths, "a list of fractions in [0, 1]"),
         config::integer("needle.trials", t.trials), config::integer("needle.distractors", t.distractors),
         config::integer("needle.seed", t.seed), config::boolean("needle.extrapolate", t.extrapolate)},
        where);
    for (int64_t length : t.lengths)
      check(length > 0, "{}: 'needle.lengths': {} is not a positive length", where, length);
    check(!t.depths.empty(), "{}: 'needle.depths' lists no depth", where);
    for (double d : t.depths) check(d >= 0.0 && d <= 1.0, "{}: 'needle.depths': {} is not in [0, 1]", where, d);
    check(t.trials > 0, "{}: 'needle.trials' must be positive, got {}", where, t.trials);
    check(t.distractors > 0 && t.distractors < kNeedleValues,
          "{}: 'needle.distractors' is {}, expected 1 to {} (distinct 7-digit values besides the needle's)", where,
          t.distractors, kNeedleValues - 1);
    n.files = section_files(files, where, "needle.files");
    n.enabled = true;
  }

  bool enabled(const SuiteSpec& spec) const override { return spec.needle.enabled; }
  std::vector<std::string> input_files(const SuiteSpec& spec) const override { return paths_of(spec.needle.files); }

  std::unique_ptr<SurfaceResult> run(model::Transformer& model, model::WeightSource& weights,
                                     const SurfaceContext& ctx) const override {
    const model::ModelConfig& config = model.config();
    auto r = std::make_unique<NeedleSurfaceResult>();
    r->task = ctx.spec.needle.task;
    r->context = config.max_seq_len;
    if (r->task.lengths.empty()) r->task.lengths = {config.max_seq_len};
    for (int64_t length : r->task.lengths)
      check(length <= config.max_seq_len || r->task.extrapolate,
            "needle.lengths: {} tokens is beyond the model's context (max_position_embeddings {}); "
            "needle.extrapolate: true scores it anyway",
            length, config.max_seq_len);
    const int64_t longest = *std::max_element(r->task.lengths.begin(), r->task.lengths.end());
    // Past its context the model runs as itself with more positions: the same weights, its RoPE continued.
    std::optional<model::Transformer> extended;
    if (longest > config.max_seq_len) {
      model::ModelConfig longer = config;
      longer.max_seq_len = longest;
      extended.emplace(longer, model.precision(), model::Remat::none, model.backend());
    }
    const std::vector<int32_t> haystack =
        haystack_tokens(ctx.spec.needle.files, uint32_t(config.eos_token_id), uint32_t(config.vocab_size),
                        uint64_t(r->task.trials * longest));
    const std::vector<NeedleCase> cases = needle_cases(r->task, haystack, ctx.tokenizer);
    r->cells = score_needle(extended ? *extended : model, weights, cases, ctx.spec.batch_tokens, ctx.progress);
    for (const NeedleCell& c : r->cells)
      ctx.progress.line(fmt::format("needle length {} depth {}: accuracy {:.3f}, mean rank {:.2f}", c.length,
                          NeedleSurfaceResult::depth_key(c.depth), c.accuracy, c.mean_rank));
    return r;
  }
};

}  // namespace

const Surface& needle_surface() {
  static const NeedleSurface surface;
  return surface;
}

}  // namespace replica::eval
