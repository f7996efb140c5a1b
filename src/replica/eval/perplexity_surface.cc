// The domain perplexity surface (eval/perplexity.h): token perplexity and bits per byte per domain, and macro
// averages.
#include <fmt/format.h>

#include "replica/core/config_fields.h"
#include "replica/eval/perplexity.h"
#include "replica/eval/suite.h"

namespace replica::eval {
namespace {

struct PerplexitySurfaceResult final : SurfaceResult {
  PerplexityResult perplexity;

  nlohmann::json to_json() const override {
    nlohmann::json domains = nlohmann::json::object();
    for (const DomainPerplexity& d : perplexity.domains)
      domains[d.label] = {{"ppl", d.ppl()},       {"bits_per_byte", d.bits_per_byte()}, {"nll", d.nll},
                          {"tokens", d.tokens},   {"bytes", d.bytes},                   {"docs", d.docs}};
    return {{"window", perplexity.window},
            {"macro_ppl", perplexity.macro_ppl()},
            {"macro_bits_per_byte", perplexity.macro_bits_per_byte()},
            {"domains", domains}};
  }

  std::string format() const override {
    std::string s = fmt::format("domain perplexity (Paloma rolling windows of {} tokens)\n", perplexity.window);
    s += fmt::format("  {:<16} {:>10} {:>10} {:>10}\n", "domain", "ppl", "bits/byte", "tokens");
    for (const DomainPerplexity* d : by_label(perplexity.domains, [](const DomainPerplexity& x) { return x.label; }))
      s += fmt::format("  {:<16} {:10.3f} {:10.4f} {:10}\n", d->label, d->ppl(), d->bits_per_byte(), d->tokens);
    s += fmt::format("  {:<16} {:10.3f} {:10.4f}\n", "macro average", perplexity.macro_ppl(),
                     perplexity.macro_bits_per_byte());
    return s;
  }
};

class PerplexitySurface final : public Surface {
 public:
  const char* name() const override { return "perplexity"; }

  void parse(const YAML::Node& section, const std::string& where, SuiteSpec& spec) const override {
    SuiteSpec::Perplexity& p = spec.perplexity;
    std::vector<std::string> files;
    config::read_mapping(section, "perplexity.",
                         {config::list("perplexity.files", files, "a list of token files"),
                          config::integer("perplexity.window", p.window, 1),
                          config::integer("perplexity.max_docs", p.max_docs, 0)},
                         where);
    p.files = section_files(files, where, "perplexity.files");
    p.enabled = true;
  }

  bool enabled(const SuiteSpec& spec) const override { return spec.perplexity.enabled; }
  std::vector<std::string> input_files(const SuiteSpec& spec) const override { return paths_of(spec.perplexity.files); }

  std::unique_ptr<SurfaceResult> run(model::Transformer& model, model::WeightSource& weights,
                                     const SurfaceContext& ctx) const override {
    const SuiteSpec::Perplexity& spec = ctx.spec.perplexity;
    auto r = std::make_unique<PerplexitySurfaceResult>();
    r->perplexity = domain_perplexity(model, weights, ctx.tokenizer, spec.files, spec.window, spec.max_docs,
                                      ctx.spec.batch_tokens, ctx.progress);
    ctx.progress.line(fmt::format("perplexity: macro {:.2f}, {:.4f} bits/byte", r->perplexity.macro_ppl(),
                        r->perplexity.macro_bits_per_byte()));
    return r;
  }
};

}  // namespace

const Surface& perplexity_surface() {
  static const PerplexitySurface surface;
  return surface;
}

}  // namespace replica::eval
