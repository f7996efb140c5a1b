// The reproduction's JSON (reproduction_json.h).
#include "replica/reproduce/reproduction_json.h"

namespace replica::reproduce {
using nlohmann::json;

namespace {

json steps_of(const std::vector<SeriesCheckpoint>& checkpoints) {
  json out = json::array();
  for (const SeriesCheckpoint& c : checkpoints) out.push_back(c.step);
  return out;
}

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The training curves compared on the steps both runs logged (report/compare.h); null unless both are runs.
json training_json(const Reproduction& r) {
  if (!r.training) return nullptr;
  json out = {{"summary", training_summary(r)}};
  if (const auto& e = r.training->exact)
    out["exact"] = {{"common_steps", e->common_steps},
                    {"identical_steps", e->identical_steps},
                    {"first_difference", e->difference ? json{{"step", e->difference->step},
                                                              {"metric", e->difference->metric}}
                                                       : json(nullptr)}};
  if (const auto& d = r.training->distance)
    out["distance"] = {{"metric", d->metric},     {"window", d->window},       {"points", d->points},
                       {"max_abs", d->max_abs},   {"mean_abs", d->mean_abs},   {"max_step", d->max_step},
                       {"threshold", r.training_options.threshold},
                       {"within", report::within(*d, r.training_options.threshold)}};
  return out;
}

json audit_json(const std::optional<DataAuditResult>& a) {
  if (!a) return nullptr;
  if (!a->error.empty()) return {{"error", a->error}};
  return {{"ok", a->ok},       {"repeat_fraction", a->repeat_fraction}, {"steps", a->steps},
          {"world_size", a->world_size}, {"fingerprint", a->fingerprint}};
}

// Each resume with the pairs around it: what the KL and the held-out Δ were before and after.
json resumes_json(const Reproduction& r, const std::vector<ResumeEvent>& events, bool candidate) {
  json out = json::array();
  for (const ResumeEvent& e : events) {
    json event = {{"step", e.step},
                  {"checkpoint", e.checkpoint},
                  {"saved_world_size", e.saved_world_size},
                  {"world_size", e.world_size},
                  {"changes", e.changes}};
    if (candidate) {
      const auto [before, after] = pairs_around(r, e.step);
      auto side = [](const PairMeasure* m) -> json {
        if (!m) return nullptr;
        const std::optional<double> heldout = heldout_delta(*m);
        return {{"step", m->step}, {"kl_mean", m->parity.kl_mean()},
                {"heldout_delta", heldout ? json(*heldout) : json(nullptr)}};
      };
      event["before"] = side(before);
      event["after"] = side(after);
    }
    out.push_back(event);
  }
  return out;
}

// How the weights were held and the planned peak.
json memory_json(const Reproduction& r) {
  json items = json::object();
  for (const distributed::MemoryItem& m : r.peak) items[m.name] = m.bytes;
  return {{"weights", r.weights}, {"planned_peak_bytes", distributed::total_bytes(r.peak)}, {"planned", items}};
}

}  // namespace

json reproduction_json(const Reproduction& r) {
  const Bounds& b = r.options.bounds;
  json pairs = json::array();
  for (size_t i = 0; i < r.measures.size(); i++) {
    const PairMeasure& m = r.measures[i];
    const PairVerdict& v = r.verdict.pairs[i];
    json surfaces = json::object();
    for (const SurfaceDelta& s : m.surfaces)
      surfaces[s.name] = {{"reference", s.reference}, {"candidate", s.candidate}, {"delta", s.delta()},
                          {"bound", optional_number(b.of(bound_kind(s.name)))}};
    json crossed = json::array();
    for (const Crossing& c : v.crossed) crossed.push_back({{"name", c.name}, {"value", c.value}, {"bound", c.bound}});
    pairs.push_back({{"step", m.step},
                     {"reference_step", m.reference_step},
                     {"tokens", m.tokens ? json(*m.tokens) : json(nullptr)},
                     {"kl_mean", m.parity.kl_mean()},
                     {"kl_max", m.parity.kl_max},
                     {"top1", m.parity.top1()},
                     {"top10_overlap", m.parity.top10()},
                     {"max_abs_logit_diff", m.parity.max_abs_logit_diff},
                     {"positions", m.parity.positions},
                     {"surfaces", surfaces},
                     {"verdict", verdict_name(v.verdict)},
                     {"crossed", crossed}});
  }
  return {{"schema", 1},
          {"pairing",
           {{"rule", r.pairing.rule},
            {"by", r.pairing.by == PairBy::tokens ? "tokens" : "step"},
            {"reference", r.reference.source},
            {"candidate", r.candidate.source},
            {"reference_only", steps_of(r.pairing.reference_only)},
            {"candidate_only", steps_of(r.pairing.candidate_only)}}},
          {"tokens", {{"source", r.tokens_source}, {"sequences", r.tokens_B}, {"length", r.tokens_T}}},
          {"suite", {{"name", r.options.suite}, {"fingerprint", r.suite_hash}}},
          {"bounds",
           {{"kl", b.kl}, {"loss", b.loss}, {"bits_per_byte", b.bits_per_byte}, {"task", b.task}, {"needle", b.needle},
            {"drift_window", b.drift_window}, {"drift_fraction", b.drift_fraction}}},
          {"pairs", pairs},
          {"verdict", verdict_name(r.verdict.verdict)},
          {"diverged_at", r.verdict.diverged_at ? json(*r.verdict.diverged_at) : json(nullptr)},
          {"first_crossed", r.verdict.diverged_at ? json(r.verdict.first_crossed) : json(nullptr)},
          {"memorisation_alarm", r.verdict.memorisation_alarm
                                     ? json{{"from_step", r.verdict.memorisation_alarm->from_step},
                                            {"step", r.verdict.memorisation_alarm->step}}
                                     : json(nullptr)},
          {"training_curves", training_json(r)},
          {"memory", memory_json(r)},
          {"data_audit", {{"reference", audit_json(r.reference_audit)}, {"candidate", audit_json(r.candidate_audit)}}},
          {"resumes",
           {{"reference", resumes_json(r, r.reference_resumes, false)},
            {"candidate", resumes_json(r, r.candidate_resumes, true)}}},
          {"evaluated", r.evaluated},
          {"cached", r.cached}};
}

}  // namespace replica::reproduce
