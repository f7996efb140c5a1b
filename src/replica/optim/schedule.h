// Learning-rate schedules with OLMo-core's formulas (olmo_core/optim/scheduler.py). The LR of optimizer
// step s (s = 1 on the first step, OLMo-core's trainer.global_step) is learning_rate(config, s).
#pragma once
#include <cstdint>
#include <string>

namespace replica::optim {

enum class ScheduleType {
  constant,        // ConstantWithWarmup (ConstantScheduler when warmup = 0)
  cosine,          // CosWithWarmup: linear warmup, cosine from lr to alpha_f·lr at t_max
  linear,          // LinearWithWarmup: linear warmup, linear from lr to alpha_f·lr at t_max (stage 2)
  wsd,             // WSD: warmup, stable at lr, linear decay to alpha_f·lr over the last `decay` steps
  half_cosine,     // HalfCosWithWarmup: warmup to the cosine midpoint, then the second half of a cosine
  olmo3_stitched,  // OLMo 3 stage 1: cosine until stitch_step, then half_cosine (part 2)
};

ScheduleType parse_schedule_type(const std::string& text);  // raises replica::Error
const char* schedule_type_name(ScheduleType type);

struct ScheduleConfig {
  ScheduleType type = ScheduleType::cosine;
  double lr = 3e-4;      // peak LR (OLMo-core's initial_lr)
  int64_t warmup = 0;    // linear warmup from 0 over this many steps
  double alpha_f = 0.1;  // final LR = alpha_f · lr (WSD: OLMo-core's decay_min_lr = alpha_f · lr)
  int64_t t_max = 0;     // horizon in steps (olmo3_stitched: part 1's horizon)
  int64_t decay = 0;     // wsd only: length of the final linear decay
  // olmo3_stitched only: steps 1..stitch_step follow part 1, later steps HalfCosWithWarmup(part2_warmup,
  // alpha_f) over part2_t_max.
  int64_t stitch_step = 0, part2_warmup = 0, part2_t_max = 0;
};

// Raises replica::Error (naming the schedule key) when the configuration cannot define a schedule.
void validate(const ScheduleConfig& config);

double learning_rate(const ScheduleConfig& config, int64_t step);

}  // namespace replica::optim
