// Surface values from a suite's results JSON.
#include "replica/reproduce/surface_values.h"

namespace replica::reproduce {

std::map<std::string, double> surface_values(const nlohmann::json& r) {
  std::map<std::string, double> out;
  if (r.contains("heldout")) {
    const nlohmann::json& h = r["heldout"];
    out["heldout/loss"] = h.at("loss").get<double>();
    for (const auto& [file, f] : h.at("files").items()) out["heldout/" + file] = f.at("loss").get<double>();
  }
  if (r.contains("perplexity")) {
    const nlohmann::json& p = r["perplexity"];
    out["perplexity/bits_per_byte"] = p.at("macro_bits_per_byte").get<double>();
    out["perplexity/ppl"] = p.at("macro_ppl").get<double>();
    for (const auto& [domain, d] : p.at("domains").items())
      out["perplexity/" + domain + "/bits_per_byte"] = d.at("bits_per_byte").get<double>();
  }
  if (r.contains("tasks"))
    for (const auto& [task, t] : r["tasks"].items()) {
      if (!t.is_object()) continue;  // "format"
      for (const auto& [key, v] : t.items())
        if (v.is_number_float() && !key.ends_with("_stderr")) out["tasks/" + task + "/" + key] = v.get<double>();
    }
  if (r.contains("needle")) {
    double sum = 0.0;
    int n = 0;
    for (const auto& [length, cells] : r["needle"].at("lengths").items()) {
      sum += cells.at("all").at("accuracy").get<double>();
      n++;
    }
    if (n) out["needle/accuracy"] = sum / n;
  }
  return out;
}

BoundKind bound_kind(const std::string& name) {
  if (name.starts_with("heldout/")) return BoundKind::loss;
  if (name.starts_with("perplexity/") && name.ends_with("bits_per_byte")) return BoundKind::bits_per_byte;
  if (name.starts_with("tasks/")) return BoundKind::task;
  if (name.starts_with("needle/")) return BoundKind::needle;
  return BoundKind::none;
}

}  // namespace replica::reproduce
