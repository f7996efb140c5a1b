// The reproduction page's sections, in order; the charts are report/svg_chart.h's.
#include "replica/reproduce/reproduction_page.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "replica/ckpt/checkpoint.h"
#include "replica/core/file.h"
#include "replica/report/svg_chart.h"
#include "replica/report/html_escape.h"
#include "replica/report/html_page.h"

namespace replica::reproduce {
namespace {
using report::escape_html;

std::string num(double v) { return fmt::format("{:.4g}", v); }

const char* verdict_class(Verdict v) { return v == Verdict::diverged ? "bad" : v == Verdict::drifting ? "warn" : "ok"; }

std::string summary_section(const Reproduction& r) {
  const Bounds& b = r.options.bounds;
  std::string s = fmt::format(
      R"(<h2>Verdict</h2><div id="summary" data-verdict="{}" data-diverged-at="{}"><p class="{}">{}</p>)"
      "<p>Pairing {}: {} pairs; {} reference and {} candidate checkpoints without a partner.</p>"
      "<p>KL tokens: {} × {} from <code>{}</code>. Suite <code>{}</code> (fingerprint <code>{}</code>).</p>"
      "<p class=\"note\">Bounds: mean KL ≤ {} nat, |Δ held-out loss| ≤ {} nat, |Δ bits/byte| ≤ {}, |Δ task metric| ≤ "
      "{}, |Δ needle accuracy| ≤ {}; drifting: the bound use rose over {} pairs to ≥ {} of a bound "
      "(docs/reproduce.md).</p>",
      verdict_name(r.verdict.verdict), r.verdict.diverged_at ? std::to_string(*r.verdict.diverged_at) : "",
      verdict_class(r.verdict.verdict), escape_html(r.verdict.summary()), escape_html(r.pairing.rule),
      r.pairing.pairs.size(), r.pairing.reference_only.size(), r.pairing.candidate_only.size(), r.tokens_B,
      r.tokens_T, escape_html(r.tokens_source), escape_html(r.options.suite), r.suite_hash.substr(0, 16), b.kl, b.loss,
      b.bits_per_byte, b.task, b.needle, b.drift_window, b.drift_fraction);
  if (r.training)
    s += fmt::format(R"(<p id="training-curves">Training curves (the steps both runs logged, as <code>replica )"
                     "report</code> compares them): {}</p>",
                     escape_html(training_summary(r)));
  if (r.verdict.memorisation_alarm)
    s += fmt::format(R"(<p class="bad" data-mark="alarm">Memorisation alarm: from step {} to {} the candidate's )"
                     "training loss fell while its held-out loss fell behind the reference's at every pair.</p>",
                     r.verdict.memorisation_alarm->from_step, r.verdict.memorisation_alarm->step);
  return s + "</div>";
}

// A replica checkpoint's data fingerprint and recipe (train_state.json, read without the checksum pass).
std::string checkpoint_identity(const SeriesCheckpoint& c) {
  const std::filesystem::path state = std::filesystem::path(c.path) / "train_state.json";
  if (!std::filesystem::exists(state)) return "";
  const nlohmann::json j = nlohmann::json::parse(read_text_file(state.string()), nullptr, false);
  if (j.is_discarded()) return "";
  const ckpt::TrainState t = ckpt::train_state_from_json(j, state.string());
  return fmt::format("<p>data fingerprint <code>{}</code>, world size {}, global batch {} × {} tokens</p>"
                     "<details><summary>recipe at step {}</summary><pre>{}</pre></details>",
                     escape_html(t.data_fingerprint), t.world_size, t.global_batch_size, t.seq_len, t.step,
                     escape_html(t.recipe));
}

std::string series_section(const Reproduction& r) {
  std::string s = R"(<h2>Series</h2><div id="series">)";
  for (const auto& [role, series, only] :
       {std::tuple{"reference", &r.reference, &r.pairing.reference_only},
        std::tuple{"candidate", &r.candidate, &r.pairing.candidate_only}}) {
    std::string unpaired;
    for (const SeriesCheckpoint& c : *only) unpaired += (unpaired.empty() ? "" : ", ") + c.label();
    s += fmt::format(R"(<section data-series-role="{}"><h3>{}: <code>{}</code></h3><p>{}, {} checkpoints, )"
                     "steps {}–{}; without a partner: {}</p>{}</section>",
                     role, role, escape_html(series->source), series->kind, series->checkpoints.size(),
                     series->checkpoints.front().step, series->checkpoints.back().step,
                     unpaired.empty() ? "none" : escape_html(unpaired), checkpoint_identity(series->checkpoints.back()));
  }
  return s + "</div>";
}

// The data audit of each replica run (run_records.h): whether its loader read an instance twice within an epoch.
std::string audit_section(const Reproduction& r) {
  std::string s = R"(<h2>Data audit</h2><div id="data-audit">)";
  bool any = false;
  for (const auto& [role, audit] :
       {std::pair{"reference", &r.reference_audit}, std::pair{"candidate", &r.candidate_audit}}) {
    if (!*audit) continue;
    any = true;
    const DataAuditResult& a = **audit;
    if (!a.error.empty()) {
      s += fmt::format(R"(<section data-audit-role="{}" data-audit="error"><h3>{}</h3><p class="warn">The audit )"
                       "could not run: {}</p></section>",
                       role, role, escape_html(a.error));
      continue;
    }
    s += fmt::format(
        R"(<section data-audit-role="{}" data-audit="{}"><h3>{}</h3><p class="{}">{}</p>)"
        "<p class=\"note\">The loader of the recipe its newest checkpoint was trained with, replayed for its {} steps "
        "at world size {} (<code>replica data audit</code>); data fingerprint <code>{}</code>.</p>"
        "<details><summary>the audit's report</summary><pre>{}</pre></details></section>",
        role, a.ok ? "ok" : "repeats", role, a.ok ? "ok" : "bad",
        a.ok ? "OK: no instance was read twice within an epoch."
             : fmt::format("ERROR: {:.1f} % of the reads were of an instance already read in the same epoch — a "
                           "loader bug (double sharding reads part of the corpus twice and part not at all).",
                           100 * a.repeat_fraction),
        a.steps, a.world_size, escape_html(a.fingerprint), escape_html(a.text));
  }
  if (!any) s += "<p class=\"note\">Neither series is a replica run: there is no loader to audit.</p>";
  return s + "</div>";
}

// Each run's resumes (run.dir/resumes.jsonl) and, for the candidate's, the pairs on either side.
std::string resumes_section(const Reproduction& r) {
  std::string s = R"(<h2>Resumes</h2><table id="resumes"><tr><th>run</th><th>resumed at step</th><th>from</th>)"
                  R"(<th>world size</th><th>what changed</th><th>KL mean before → after</th>)"
                  R"(<th>Δ held-out before → after</th></tr>)";
  size_t rows = 0;
  for (const auto& [role, events] :
       {std::pair{"reference", &r.reference_resumes}, std::pair{"candidate", &r.candidate_resumes}})
    for (const ResumeEvent& e : *events) {
      std::string changes;
      for (const std::string& c : e.changes) changes += (changes.empty() ? "" : "<br>") + escape_html(c);
      std::string kl = "—", heldout = "—";
      if (role == std::string("candidate")) {
        const auto [before, after] = pairs_around(r, e.step);
        auto at = [](const PairMeasure* m, auto value) { return m ? value(*m) : std::string("—"); };
        auto kl_of = [](const PairMeasure& m) { return fmt::format("{} (step {})", num(m.parity.kl_mean()), m.step); };
        auto heldout_of = [](const PairMeasure& m) {
          const std::optional<double> d = heldout_delta(m);
          return d ? fmt::format("{:+.4g} (step {})", *d, m.step) : std::string("—");
        };
        kl = at(before, kl_of) + " → " + at(after, kl_of);
        heldout = at(before, heldout_of) + " → " + at(after, heldout_of);
      }
      s += fmt::format(R"(<tr data-resume-role="{}" data-resume-step="{}"><td>{}</td><td class="num">{}</td>)"
                       R"(<td><code>{}</code></td><td class="num">{} → {}</td><td>{}</td><td>{}</td>)"
                       R"(<td>{}</td></tr>)",
                       role, e.step, role, e.step, escape_html(e.checkpoint), e.saved_world_size, e.world_size,
                       changes.empty() ? "nothing" : changes, kl, heldout);
      rows++;
    }
  if (rows == 0) s += R"(<tr><td colspan="7">No resume recorded (run.dir/resumes.jsonl).</td></tr>)";
  return s + "</table>";
}

std::string first_pair_section(const Reproduction& r) {
  const PairMeasure& m = r.measures.front();
  const CheckpointPair& p = r.pairing.pairs.front();
  return fmt::format(
      R"(<h2>Parity at the first pair</h2><table id="first-pair"><tr><th>reference</th><th>candidate</th>)"
      R"(<th>KL mean</th><th>KL max</th><th>top-1</th><th>top-10 overlap</th><th>max |Δlogit|</th></tr>)"
      R"(<tr><td><code>{}</code></td><td><code>{}</code></td><td class="num">{}</td><td class="num">{}</td>)"
      R"(<td class="num">{:.2f} %</td><td class="num">{:.2f} %</td><td class="num">{}</td></tr></table>)"
      R"(<p class="note">A run started from the reference's own first checkpoint must show ≈ 0 here.</p>)",
      escape_html(p.reference.path), escape_html(p.candidate.path), num(m.parity.kl_mean()), num(m.parity.kl_max),
      100 * m.parity.top1(), 100 * m.parity.top10(), num(m.parity.max_abs_logit_diff));
}

std::string verdict_table(const Reproduction& r) {
  std::string s = R"(<h2>Pairs</h2><table id="verdicts"><tr><th>step</th><th>reference step</th><th>tokens</th>)"
                  R"(<th>KL mean</th><th>KL max</th><th>top-1</th><th>max |Δlogit|</th><th>Δ held-out</th>)"
                  R"(<th>verdict</th><th>crossed / nearest bound</th></tr>)";
  for (size_t i = 0; i < r.measures.size(); i++) {
    const PairMeasure& m = r.measures[i];
    const PairVerdict& v = r.verdict.pairs[i];
    std::string heldout = "—";
    for (const SurfaceDelta& d : m.surfaces)
      if (d.name == "heldout/loss") heldout = fmt::format("{:+.4g}", d.delta());
    std::string why;
    for (const Crossing& c : v.crossed) why += fmt::format("{}{} {} &gt; {}", why.empty() ? "" : "; ", c.name, num(c.value), num(c.bound));
    if (why.empty()) why = fmt::format("{} at {:.0f} % of its bound", escape_html(v.nearest), 100 * v.bound_use);
    s += fmt::format(R"(<tr data-step="{}" data-verdict="{}"><td class="num">{}</td><td class="num">{}</td>)"
                     R"(<td class="num">{}</td><td class="num">{}</td><td class="num">{}</td>)"
                     R"(<td class="num">{:.2f} %</td><td class="num">{}</td><td class="num">{}</td>)"
                     R"(<td class="{}">{}</td><td>{}</td></tr>)",
                     m.step, verdict_name(v.verdict), m.step, m.reference_step,
                     m.tokens ? std::to_string(*m.tokens) : "—", num(m.parity.kl_mean()), num(m.parity.kl_max),
                     100 * m.parity.top1(), num(m.parity.max_abs_logit_diff), heldout, verdict_class(v.verdict),
                     verdict_name(v.verdict), why);
  }
  return s + "</table>";
}

std::vector<report::Chart> charts(const Reproduction& r) {
  std::vector<report::ChartRule> rules;
  if (r.verdict.diverged_at)
    rules.push_back({"diverged", *r.verdict.diverged_at, "diverged: " + r.verdict.first_crossed});
  report::Chart kl{.id = "kl", .title = "KL(reference || candidate) per pair", .y_label = "nats"};
  report::Series kl_mean, kl_max, top1;
  for (const PairMeasure& m : r.measures) {
    kl_mean.push_back({m.step, m.parity.kl_mean()});
    kl_max.push_back({m.step, m.parity.kl_max});
    top1.push_back({m.step, m.parity.top1()});
  }
  kl.series = {{.id = "kl_mean", .label = "mean", .points = kl_mean, .color = report::palette_color(0), .dots = true},
               {.id = "kl_max", .label = "max", .points = kl_max, .color = report::palette_color(1), .dash = "4 3",
                .dots = true}};
  kl.note = fmt::format("the bound on the mean: {} nat", r.options.bounds.kl);
  kl.rules = rules;
  report::Chart agreement{.id = "top1", .title = "top-1 agreement per pair", .y_label = "fraction"};
  agreement.series = {{.id = "top1", .label = "top-1", .points = top1, .color = report::palette_color(2), .dots = true}};
  agreement.rules = rules;
  std::vector<report::Chart> out = {kl, agreement};
  // One chart of Δ per surface (heldout, perplexity, tasks, needle), a series per value.
  std::map<std::string, std::map<std::string, report::Series>> deltas;
  for (const PairMeasure& m : r.measures)
    for (const SurfaceDelta& d : m.surfaces) deltas[d.name.substr(0, d.name.find('/'))][d.name].push_back({m.step, d.delta()});
  for (const auto& [surface, series] : deltas) {
    report::Chart c{.id = "delta-" + surface, .title = "Δ " + surface + " (candidate − reference)", .y_label = "Δ"};
    size_t i = 0;
    for (const auto& [name, points] : series)
      c.series.push_back({.id = name, .label = name, .points = points, .color = report::palette_color(i++), .dots = true});
    c.rules = rules;
    out.push_back(c);
  }
  // The training curves of both runs, where they log them.
  for (const auto& [metric, title] : {std::pair{"loss", "training loss"}, std::pair{"heldout", "in-loop held-out loss"}}) {
    report::Chart c{.id = std::string("train-") + metric, .title = title, .y_label = "nats"};
    for (const auto& [role, curves] : {std::pair{"reference", &r.reference_train}, std::pair{"candidate", &r.candidate_train}})
      if (const auto it = curves->find(metric); it != curves->end())
        c.series.push_back({.id = std::string(role) + "/" + metric, .label = role, .points = it->second,
                            .color = report::palette_color(c.series.size()), .dots = metric == std::string("heldout")});
    if (!c.series.empty()) out.push_back(c);
  }
  return out;
}

}  // namespace

std::string render_reproduction_page(const Reproduction& r) {
  std::string figures;
  for (const report::Chart& c : charts(r)) figures += report::render_chart(c);
  const std::string title = fmt::format("replica reproduction: {} vs {}", r.candidate.source, r.reference.source);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}"
      ".warn{{color:#a15c00;font-weight:600}}</style></head><body><h1>{}</h1>{}{}{}{}{}{}<h2>Against step</h2>"
      "<div id=\"charts\">{}</div></body></html>\n",
      escape_html(title), report::page_style(), escape_html(title), summary_section(r), series_section(r),
      audit_section(r), first_pair_section(r), verdict_table(r), resumes_section(r), figures);
}

}  // namespace replica::reproduce
