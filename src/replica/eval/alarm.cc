// Memorisation alarm.
#include "replica/eval/alarm.h"

#include <fmt/format.h>

#include <algorithm>

#include "replica/core/error.h"

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

nlohmann::json MemorisationAlarm::to_json() const {
  nlohmann::json points = nlohmann::json::array();
  // Only the last `window` evaluations are ever compared with a later one.
  const size_t keep = std::min(points_.size(), size_t(std::max<int64_t>(window_, 0)));
  for (size_t i = points_.size() - keep; i < points_.size(); i++)
    points.push_back({{"step", points_[i].step}, {"train", points_[i].train}, {"heldout", points_[i].heldout}});
  return {{"train_sum", train_sum_}, {"train_n", train_n_}, {"points", points}};
}

void MemorisationAlarm::load_json(const nlohmann::json& state, const std::string& source) {
  try {
    std::vector<Point> points;
    for (const nlohmann::json& p : state.at("points"))
      points.push_back({p.at("step").get<int64_t>(), p.at("train").get<double>(), p.at("heldout").get<double>()});
    train_sum_ = state.at("train_sum").get<double>();
    train_n_ = state.at("train_n").get<int64_t>();
    points_ = std::move(points);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: observers.memorisation_alarm: not the alarm's state ({})", source, e.what());
  }
}

}  // namespace replica::eval
