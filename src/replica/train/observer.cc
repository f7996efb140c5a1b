// Observer state across a resume: collected into each checkpoint and handed back on resume, by name.
#include "replica/train/observer.h"

#include "replica/core/error.h"

namespace replica::train {

nlohmann::json observer_states(const std::vector<std::unique_ptr<Observer>>& observers) {
  nlohmann::json states = nlohmann::json::object();
  for (const auto& o : observers)
    if (const std::string name = o->state_name(); !name.empty()) {
      check(!states.contains(name), "two observers keep their state under the name '{}'", name);
      states[name] = o->save_state();
    }
  return states;
}

void restore_observer_states(const std::vector<std::unique_ptr<Observer>>& observers, const nlohmann::json& states,
                             const std::string& source) {
  for (const auto& o : observers)
    if (const std::string name = o->state_name(); !name.empty() && states.contains(name))
      o->restore_state(states.at(name), source);
}

}  // namespace replica::train
