// LR schedules: each formula is OLMo-core's, term for term, so double results agree bit for bit.
#include "replica/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "replica/core/error.h"

// Python rounds every product: no fused multiply-adds here, so results match OLMo-core bit for bit.
#pragma GCC optimize("fp-contract=off")

namespace replica::optim {

ScheduleType parse_schedule_type(const std::string& text) {
  if (text == "constant") return ScheduleType::constant;
  if (text == "cosine") return ScheduleType::cosine;
  if (text == "linear") return ScheduleType::linear;
  if (text == "wsd") return ScheduleType::wsd;
  if (text == "half_cosine") return ScheduleType::half_cosine;
  if (text == "olmo3_stitched") return ScheduleType::olmo3_stitched;
  fail("schedule.type must be constant, cosine, linear, wsd, half_cosine or olmo3_stitched, got '{}'", text);
}

const char* schedule_type_name(ScheduleType type) {
  switch (type) {
    case ScheduleType::constant:
      return "constant";
    case ScheduleType::cosine:
      return "cosine";
    case ScheduleType::linear:
      return "linear";
    case ScheduleType::wsd:
      return "wsd";
    case ScheduleType::half_cosine:
      return "half_cosine";
    case ScheduleType::olmo3_stitched:
      return "olmo3_stitched";
  }
  return "?";
}

void validate(const ScheduleConfig& c) {
  check(c.lr > 0, "schedule: the peak LR (optim.lr) must be positive, got {}", c.lr);
  check(c.warmup >= 0, "schedule.warmup_steps must be >= 0, got {}", c.warmup);
  check(c.alpha_f >= 0 && c.alpha_f <= 1, "schedule.alpha_f must be in [0, 1], got {}", c.alpha_f);
  if (c.type == ScheduleType::constant) return;
  check(c.t_max > c.warmup, "schedule: the horizon t_max ({}) must exceed schedule.warmup_steps ({})", c.t_max,
        c.warmup);
  if (c.type == ScheduleType::wsd)
    check(c.decay > 0 && c.decay <= c.t_max - c.warmup,
          "schedule.decay_steps must be in [1, t_max - warmup_steps] = [1, {}] for wsd, got {}", c.t_max - c.warmup,
          c.decay);
  if (c.type == ScheduleType::olmo3_stitched) {
    check(c.stitch_step > 0, "schedule.stitch_step must be positive for olmo3_stitched, got {}", c.stitch_step);
    check(c.part2_t_max > c.part2_warmup,
          "schedule: part 2's horizon ({}) must exceed schedule.part2_warmup_steps ({}) for olmo3_stitched",
          c.part2_t_max, c.part2_warmup);
  }
}

// _linear_warmup with warmup_min_lr = 0: warmup_min_lr + (lr - warmup_min_lr) * min(s, w) / w.
static double linear_warmup(double lr, int64_t step, int64_t warmup) {
  return 0.0 + (lr - 0.0) * double(std::min(step, warmup)) / double(warmup);
}

static double cos_with_warmup(double lr, int64_t step, int64_t warmup, double alpha_f, int64_t t_max) {
  double eta_min = lr * alpha_f;
  if (step < warmup) return linear_warmup(lr, step, warmup);
  if (step >= t_max) return eta_min;
  double current = double(step - warmup), t = double(t_max - warmup);
  return eta_min + (lr - eta_min) * (1 + std::cos(std::numbers::pi * current / t)) / 2;
}

static double half_cos_with_warmup(double lr, int64_t step, int64_t warmup, double alpha_f, int64_t t_max) {
  double eta_min = lr * alpha_f;
  if (step < warmup) return linear_warmup(eta_min + (lr - eta_min) / 2, step, warmup);
  if (step >= t_max) return eta_min;
  int64_t t = t_max - warmup;
  double current = double(step - warmup + t);  // second half: from t to 2t of a cosine over 2t
  return eta_min + (lr - eta_min) * (1 + std::cos(std::numbers::pi * current / double(2 * t))) / 2;
}

double learning_rate(const ScheduleConfig& c, int64_t step) {
  double eta_min = c.lr * c.alpha_f;
  switch (c.type) {
    case ScheduleType::constant:
      return step < c.warmup ? linear_warmup(c.lr, step, c.warmup) : c.lr;
    case ScheduleType::cosine:
      return cos_with_warmup(c.lr, step, c.warmup, c.alpha_f, c.t_max);
    case ScheduleType::linear: {
      if (step < c.warmup) return linear_warmup(c.lr, step, c.warmup);
      if (step >= c.t_max) return eta_min;
      return c.lr - (c.lr - eta_min) * (double(step - c.warmup) / double(c.t_max - c.warmup));
    }
    case ScheduleType::wsd: {
      if (step <= c.warmup && c.warmup > 0) return linear_warmup(c.lr, step, c.warmup);
      if (step >= c.t_max) return eta_min;
      if (step >= c.t_max - c.decay)
        return eta_min + (c.lr - eta_min) * double(std::min(c.t_max - step, c.decay)) / double(c.decay);
      return c.lr;
    }
    case ScheduleType::half_cosine:
      return half_cos_with_warmup(c.lr, step, c.warmup, c.alpha_f, c.t_max);
    case ScheduleType::olmo3_stitched:
      if (step <= c.stitch_step) return cos_with_warmup(c.lr, step, c.warmup, c.alpha_f, c.t_max);
      return half_cos_with_warmup(c.lr, step, c.part2_warmup, c.alpha_f, c.part2_t_max);
  }
  return c.lr;
}

}  // namespace replica::optim
