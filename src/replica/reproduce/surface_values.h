// The numbers a pair's surfaces are compared by, read from a suite's results (eval/suite.h SuiteResults::to_json):
// held-out loss (overall and per file), bits per byte (macro and per domain) and the macro perplexity, each task's
// metrics, and the needle's accuracy. Each name says which bound (reproduce/verdict.h) it is held to.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace replica::reproduce {

// "heldout/loss", "heldout/<file>", "perplexity/bits_per_byte", "perplexity/<domain>/bits_per_byte",
// "perplexity/ppl", "tasks/<task>/<metric>", "needle/accuracy" — those the results hold.
std::map<std::string, double> surface_values(const nlohmann::json& suite_results);

enum class BoundKind { loss, bits_per_byte, task, needle, none };
BoundKind bound_kind(const std::string& name);

}  // namespace replica::reproduce
