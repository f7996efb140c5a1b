// The KL surface (eval/kl.h): KL(reference ‖ model) and top-1 agreement per domain and over all of them.
#include <fmt/format.h>

#include "replica/ckpt/model_source.h"
#include "replica/core/config_fields.h"
#include "replica/eval/kl.h"
#include "replica/eval/suite.h"

namespace replica::eval {
namespace {

struct KlSurfaceResult final : SurfaceResult {
  std::string reference;
  ParityStats all;
  std::vector<DomainKl> domains;

  nlohmann::json to_json() const override {
    nlohmann::json per_domain = nlohmann::json::object();
    for (const DomainKl& d : domains) per_domain[d.label] = d.stats.to_json();
    return {{"reference", reference}, {"all", all.to_json()}, {"domains", per_domain}};
  }

  std::string format() const override {
    std::string s = fmt::format("KL(reference || model) vs {}\n", reference);
    s += fmt::format("  {:<16} {:>10} {:>10} {:>8} {:>9}\n", "domain", "kl_mean", "kl_max", "top1", "positions");
    auto row = [&](const std::string& label, const ParityStats& p) {
      s += fmt::format("  {:<16} {:10.4g} {:10.4g} {:8.4f} {:9}\n", label, p.kl_mean(), p.kl_max, p.top1(),
                       p.positions);
    };
    for (const DomainKl* d : by_label(domains, [](const DomainKl& x) { return x.label; })) row(d->label, d->stats);
    row("all", all);
    return s;
  }
};

class KlSurface final : public Surface {
 public:
  const char* name() const override { return "kl"; }

  void parse(const YAML::Node& section, const std::string& where, SuiteSpec& spec) const override {
    SuiteSpec::Kl& k = spec.kl;
    std::vector<std::string> files;
    config::read_mapping(section, "kl.",
                         {config::text("kl.reference", k.reference),
                          config::list("kl.files", files, "a list of token files"),
                          config::integer("kl.window", k.window, 1),
                          config::integer("kl.max_positions", k.max_positions, 0)},
                         where);
    k.files = section_files(files, where, "kl.files");
    check(!k.reference.empty(), "{}: kl.reference names no model", where);
  }

  bool enabled(const SuiteSpec& spec) const override { return !spec.kl.reference.empty(); }
  // The token files; the reference model is a directory or checkpoint the suite names.
  std::vector<std::string> input_files(const SuiteSpec& spec) const override { return paths_of(spec.kl.files); }

  std::unique_ptr<SurfaceResult> run(model::Transformer& model, model::WeightSource& weights,
                                     const SurfaceContext& ctx) const override {
    const SuiteSpec::Kl& spec = ctx.spec.kl;
    ckpt::HfModel ref = ckpt::load_model_source(spec.reference);
    model::Transformer reference(ref.config, model.precision(), model::Remat::none, model.backend());
    reference.use_attention(model.attention());  // both models' attention computed alike
    const OnBackend ref_params(model.backend(), ref.params);
    auto r = std::make_unique<KlSurfaceResult>();
    r->reference = spec.reference;
    r->domains = domain_kl(reference, reference.whole_weights(ref_params.data()), model, weights, spec.files,
                           spec.window, spec.max_positions, ctx.progress);
    for (const DomainKl& d : r->domains) r->all += d.stats;
    ctx.progress.line(
        fmt::format("KL(reference || model) mean {:.4g}, top-1 agreement {:.4f}", r->all.kl_mean(), r->all.top1()));
    return r;
  }
};

}  // namespace

const Surface& kl_surface() {
  static const KlSurface surface;
  return surface;
}

}  // namespace replica::eval
