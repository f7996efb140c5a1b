// Skip-step rule: rolling loss and grad-norm history, mean and Bessel std over the previous values.
#include "replica/optim/skip_step.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"

namespace replica::optim {

SkipStep::SkipStep(int64_t window, double sigma) : window_(window), sigma_(sigma) {
  check(window >= 2, "optim.skip_step_window must be >= 2, got {}", window);
  check(sigma > 0, "optim.skip_step_sigma must be positive, got {}", sigma);
}

// value - mean <= sigma * std over the finite values of history[0 .. size-2]; false when value is not
// finite or the statistics are undefined (fewer than two finite previous values: std is NaN).
static bool within_bounds(const std::deque<double>& history, double sigma) {
  double value = history.back();
  if (!std::isfinite(value)) return false;
  double sum = 0;
  int64_t n = 0;
  for (size_t i = 0; i + 1 < history.size(); i++)
    if (std::isfinite(history[i])) sum += history[i], n++;
  if (n < 2) return false;
  double mean = sum / double(n), squares = 0;
  for (size_t i = 0; i + 1 < history.size(); i++)
    if (std::isfinite(history[i])) squares += (history[i] - mean) * (history[i] - mean);
  double std = std::sqrt(squares / double(n - 1));
  return value - mean <= sigma * std;
}

static void push(std::deque<double>& history, double value, int64_t window) {
  history.push_back(value);
  while (int64_t(history.size()) > window + 1) history.pop_front();
}

bool SkipStep::record(double loss, std::optional<double> grad_norm) {
  push(losses_, loss, window_);
  if (grad_norm) push(grad_norms_, *grad_norm, window_);
  if (int64_t(losses_.size()) < std::max<int64_t>(2, window_ / 2)) return true;
  bool ok = within_bounds(losses_, sigma_);
  if (!grad_norms_.empty()) ok = ok && within_bounds(grad_norms_, sigma_);
  return ok;
}

static nlohmann::json values_to_json(const std::deque<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
  return out;
}

static std::deque<double> values_from_json(const nlohmann::json& j, const char* key, int64_t window) {
  check(j.contains(key) && j[key].is_array(), "skip-step state: '{}' must be an array of numbers", key);
  check(int64_t(j[key].size()) <= window + 1, "skip-step state: '{}' holds {} values, more than window + 1 = {}", key,
        j[key].size(), window + 1);
  std::deque<double> out;
  for (const nlohmann::json& v : j[key]) {
    check(v.is_number() || v.is_null(), "skip-step state: '{}' holds {}, expected a number or null", key, v.dump());
    out.push_back(v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>());
  }
  return out;
}

nlohmann::json SkipStep::to_json() const {
  return {{"window", window_},
          {"sigma", sigma_},
          {"losses", values_to_json(losses_)},
          {"grad_norms", values_to_json(grad_norms_)}};
}

void SkipStep::load_json(const nlohmann::json& state) {
  check(state.is_object(), "skip-step state must be an object, got {}", state.dump());
  check(state.contains("window") && state["window"].is_number_integer() && state["window"].get<int64_t>() == window_,
        "skip-step state: window {} does not match optim.skip_step_window = {}",
        state.contains("window") ? state["window"].dump() : "(missing)", window_);
  losses_ = values_from_json(state, "losses", window_);
  grad_norms_ = values_from_json(state, "grad_norms", window_);
}

}  // namespace replica::optim
