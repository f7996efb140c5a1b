// Memorisation alarm.
#include "replica/eval/alarm.h"

#include <fmt/format.h>

namespace replica::eval {

std::string AlarmReport::message() const {
  return fmt::format(
      "WARNING memorisation: from step {} to {} training loss fell {:.4f} -> {:.4f} while held-out loss went "
      "{:.4f} -> {:.4f}; the model fits its training data without generalising (repeated data? a data-order bug?)",
      first_step, step, train_before, train_now, heldout_before, heldout_now);
}

void MemorisationAlarm::add_train_loss(double loss) {
  train_sum_ += loss;
  train_n_++;
}

std::optional<AlarmReport> MemorisationAlarm::evaluation(int64_t step, double heldout_loss) {
  if (train_n_ == 0) return std::nullopt;  // the evaluation before training: no training loss yet
  points_.push_back({step, train_sum_ / double(train_n_), heldout_loss});
  train_sum_ = 0.0;
  train_n_ = 0;
  if (window_ <= 0 || int64_t(points_.size()) <= window_) return std::nullopt;
  const Point& a = points_[points_.size() - 1 - size_t(window_)];
  const Point& b = points_.back();
  if (a.train - b.train > margin_ && a.heldout - b.heldout < margin_)
    return AlarmReport{a.step, b.step, a.train, b.train, a.heldout, b.heldout};
  return std::nullopt;
}

}  // namespace replica::eval
