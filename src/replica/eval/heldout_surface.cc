// The held-out loss surface (eval/heldout.h): per-file and overall loss over truncated documents.
#include <fmt/format.h>

#include <algorithm>

#include "replica/core/config_fields.h"
#include "replica/eval/heldout.h"
#include "replica/eval/suite.h"

namespace replica::eval {
namespace {

struct HeldoutSurfaceResult final : SurfaceResult {
  HeldoutResult heldout;

  nlohmann::json to_json() const override {
    nlohmann::json files = nlohmann::json::object();
    for (const HeldoutFile& f : heldout.files)
      files[f.label] = {{"loss", f.loss},   {"nll", f.nll},   {"tokens", f.tokens},
                        {"docs", f.docs},   {"olmo_ce", f.doc_tokens ? f.nll / double(f.doc_tokens) : 0.0}};
    return {{"loss", heldout.loss},       {"tokens", heldout.tokens}, {"docs", heldout.docs},
            {"seq_len", heldout.seq_len}, {"files", files}};
  }

  std::string format() const override {
    std::string s =
        fmt::format("held-out loss (documents truncated to {} tokens, mean CE per predicted token)\n", heldout.seq_len);
    for (const HeldoutFile* f : by_label(heldout.files, [](const HeldoutFile& x) { return x.label; }))
      s += fmt::format("  {:<16} {:8.4f}  ({} docs, {} tokens)\n", f->label, f->loss, f->docs, f->tokens);
    s += fmt::format("  {:<16} {:8.4f}  ({} docs, {} tokens)\n", "all", heldout.loss, heldout.docs, heldout.tokens);
    return s;
  }
};

class HeldoutSurface final : public Surface {
 public:
  const char* name() const override { return "heldout"; }

  void parse(const YAML::Node& section, const std::string& where, SuiteSpec& spec) const override {
    SuiteSpec::Heldout& h = spec.heldout;
    std::vector<std::string> files;
    config::read_mapping(section, "heldout.",
                         {config::list("heldout.files", files, "a list of token files"),
                          config::integer("heldout.seq_len", h.seq_len, 0),
                          config::integer("heldout.max_docs", h.max_docs, 0)},
                         where);
    h.files = section_files(files, where, "heldout.files");
    h.enabled = true;
  }

  bool enabled(const SuiteSpec& spec) const override { return spec.heldout.enabled; }
  std::vector<std::string> input_files(const SuiteSpec& spec) const override { return paths_of(spec.heldout.files); }

  std::unique_ptr<SurfaceResult> run(model::Transformer& model, model::WeightSource& weights,
                                     const SurfaceContext& ctx) const override {
    const SuiteSpec::Heldout& spec = ctx.spec.heldout;
    const int64_t max_T = model.config().max_seq_len;
    auto r = std::make_unique<HeldoutSurfaceResult>();
    const int64_t seq_len = spec.seq_len > 0 ? std::min(spec.seq_len, max_T) : max_T;
    const int64_t micro = std::max<int64_t>(1, ctx.spec.batch_tokens / seq_len);
    const data::FslDataset set(spec.files, seq_len, data::TokenDtype::u32, uint32_t(model.config().vocab_size));
    r->heldout = heldout_loss(model, weights, set, micro, spec.max_docs, ctx.progress);
    ctx.progress.line(fmt::format("held-out loss {:.4f} over {} tokens ({} docs truncated to {} tokens)",
                                  r->heldout.loss, r->heldout.tokens, r->heldout.docs, r->heldout.seq_len));
    return r;
  }
};

}  // namespace

const Surface& heldout_surface() {
  static const HeldoutSurface surface;
  return surface;
}

}  // namespace replica::eval
