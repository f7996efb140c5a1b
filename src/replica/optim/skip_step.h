// OLMo-core's skip-step rule (olmo_core/optim/skip_step_optimizer.py): skip the optimizer step when this
// step's loss or grad norm is more than sigma standard deviations above the mean of the previous values.
#pragma once
#include <cstdint>
#include <deque>
#include <nlohmann/json_fwd.hpp>
#include <optional>

namespace replica::optim {

// The recipe's optim.skip_step, optim.skip_step_window and optim.skip_step_sigma.
struct SkipStepConfig {
  bool enabled = true;
  int64_t window = 128;  // previous values kept (rolling_interval_length)
  double sigma = 6.0;    // sigma_factor
};

class SkipStep {
 public:
  explicit SkipStep(int64_t window = 128, double sigma = 6.0);
  explicit SkipStep(const SkipStepConfig& config) : SkipStep(config.window, config.sigma) {}

  // Records this step's loss (global-batch mean CE, no z-loss) and, when clipping computed one, its grad
  // norm (before clipping); returns true when the optimizer should step. Values are recorded whether or
  // not the step is skipped. The rule is active once the history holds window/2 values (this one
  // included); then it skips when the current value is non-finite or
  //   value - mean(prev) > sigma * std(prev)   (Bessel std, non-finite previous values left out)
  // for the loss or the grad norm, prev = up to `window` previous values.
  bool record(double loss, std::optional<double> grad_norm);

  // The history, for checkpoints (non-finite values are stored as null and read back as NaN).
  nlohmann::json to_json() const;
  void load_json(const nlohmann::json& state);  // raises replica::Error on a malformed state

  int64_t window() const { return window_; }
  double sigma() const { return sigma_; }
  size_t size() const { return losses_.size(); }

 private:
  int64_t window_;
  double sigma_;
  std::deque<double> losses_, grad_norms_;  // up to window + 1 values, the current one last
};

}  // namespace replica::optim
