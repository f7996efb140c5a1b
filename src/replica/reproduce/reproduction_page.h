// DIR/reproduction.html: one self-contained page (inline CSS and SVG, no script, the style of `replica report`) a
// reviewer reads to decide whether a reproduction holds. Sections (each an id): #summary (the verdict, the pairing
// rule, the bounds), #series (what each series is: its source, checkpoints, data fingerprint and recipe of replica
// checkpoints), #data-audit (each replica run's data audit), #first-pair (parity at the first pair), #verdicts (the
// pair table), #resumes (each run's resumes, what they changed, the candidate's pairs either side), #charts (KL and
// each surface's Δ against step, the training curves of both runs where they log them).
#pragma once
#include <string>

#include "replica/reproduce/reproduce.h"

namespace replica::reproduce {

std::string render_reproduction_page(const Reproduction& r);

}  // namespace replica::reproduce
