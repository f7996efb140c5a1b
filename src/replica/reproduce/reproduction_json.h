// `replica reproduce --json FILE`: the reproduction as one JSON object, a stable schema (docs/reproduce.md):
//   {"schema": 1, "pairing": {"rule", "by", "reference", "candidate", "reference_only": [step], "candidate_only": [step]},
//    "tokens": {"source", "sequences", "length"}, "suite": {"name", "fingerprint"}, "bounds": {...},
//    "pairs": [{"step", "reference_step", "tokens", "kl_mean", "kl_max", "top1", "top10_overlap",
//               "max_abs_logit_diff", "surfaces": {NAME: {"reference", "candidate", "delta", "bound"}},
//               "verdict", "crossed": [{"name", "value", "bound"}]}],
//    "verdict", "diverged_at", "first_crossed", "memorisation_alarm": null | {"from_step", "step"}, "training_curves",
//    "memory": {"weights", "planned_peak_bytes", "planned"}, "data_audit": {"reference", "candidate"},
//    "resumes": {"reference": [...], "candidate": [...]}, "evaluated", "cached"}
#pragma once
#include <nlohmann/json.hpp>

#include "replica/reproduce/reproduce.h"

namespace replica::reproduce {

nlohmann::json reproduction_json(const Reproduction& r);

}  // namespace replica::reproduce
