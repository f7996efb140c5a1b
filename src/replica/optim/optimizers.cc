// The optimizers by name: parsing, their state names and construction.
#include "replica/optim/optimizers.h"

#include "replica/core/error.h"

namespace replica::optim {

OptimizerName parse_optimizer_name(const std::string& text) {
  for (OptimizerName n : {OptimizerName::adamw, OptimizerName::sgd})
    if (text == optimizer_name(n)) return n;
  fail("optimizer must be 'adamw' or 'sgd', got '{}'", text);
}

const char* optimizer_name(OptimizerName name) {
  switch (name) {
    case OptimizerName::adamw: return "adamw";
    case OptimizerName::sgd: return "sgd";
  }
  return "?";
}

std::vector<std::string> state_names(const OptimizerConfig& c) {
  switch (c.name) {
    case OptimizerName::adamw: return {"exp_avg", "exp_avg_sq"};
    case OptimizerName::sgd: return c.sgd.momentum > 0 ? std::vector<std::string>{"momentum_buffer"}
                                                      : std::vector<std::string>{};
  }
  return {};
}

bool state_in_host_memory(const OptimizerConfig& c) { return c.name == OptimizerName::adamw && c.adamw.host_moments; }

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, const model::ParamTable& table,
                                          std::vector<Optimizer::Part> parts, Backend& backend) {
  switch (c.name) {
    case OptimizerName::adamw: return std::make_unique<AdamW>(table, c.adamw, std::move(parts), backend);
    case OptimizerName::sgd: return std::make_unique<Sgd>(table, c.sgd, std::move(parts), backend);
  }
  fail("optimizer {} has no constructor", int(c.name));
}

}  // namespace replica::optim
