// The memorisation alarm: training loss (mean of the steps since the previous evaluation) is tracked against
// held-out loss at each evaluation; over the last `window` evaluations, when training loss fell by more than
// `margin` while held-out loss did not (it fell by less than `margin`, stayed flat or rose), the model is
// fitting its training data without generalising — the failure a repeated-data bug produces.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace replica::eval {

struct AlarmReport {
  int64_t first_step = 0, step = 0;        // the evaluations compared
  double train_before = 0.0, train_now = 0.0;
  double heldout_before = 0.0, heldout_now = 0.0;
  std::string message() const;
};

class MemorisationAlarm {
 public:
  MemorisationAlarm(int64_t window, double margin) : window_(window), margin_(margin) {}
  void add_train_loss(double loss);
  // Records an evaluation; returns the report when the alarm fires at it.
  std::optional<AlarmReport> evaluation(int64_t step, double heldout_loss);

  // The state a checkpoint keeps: the evaluations the window can still compare and the training loss since the
  // last. load_json raises replica::Error naming `source` on a malformed state.
  nlohmann::json to_json() const;
  void load_json(const nlohmann::json& state, const std::string& source);

 private:
  struct Point {
    int64_t step;
    double train, heldout;
  };
  int64_t window_;
  double margin_;
  double train_sum_ = 0.0;
  int64_t train_n_ = 0;
  std::vector<Point> points_;
};

}  // namespace replica::eval
