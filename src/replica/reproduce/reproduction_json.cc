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
          {"evaluated", r.evaluated},
          {"cached", r.cached}};
}

}  // namespace replica::reproduce
