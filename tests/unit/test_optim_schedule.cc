// optim/schedule: OLMo-core's LR formulas at known steps, the OLMo 3 stitched schedule at the values in
// shared/reference/olmo3.md §2.1 (and bit-exact against Python's evaluation of OLMo-core's formulas).
#include <gtest/gtest.h>

#include "replica/core/error.h"
#include "replica/optim/schedule.h"

namespace replica::optim {
namespace {

// OLMo 3 7B stage 1: CosWithWarmup(2000, 0.1) over ceil(5e12/4194304) = 1,192,093 steps until step 596,047,
// then HalfCosWithWarmup(597,046, 0.1) over ceil(7e12/4194304) = 1,668,931 steps.
ScheduleConfig olmo3_stage1() {
  ScheduleConfig c;
  c.type = ScheduleType::olmo3_stitched;
  c.lr = 3e-4;
  c.warmup = 2000;
  c.alpha_f = 0.1;
  c.t_max = 1192093;
  c.stitch_step = 596047;
  c.part2_warmup = 597046;
  c.part2_t_max = 1668931;
  return c;
}

TEST(Schedule, Olmo3StitchedPublishedValues) {
  ScheduleConfig c = olmo3_stage1();
  EXPECT_NO_THROW(validate(c));
  EXPECT_NEAR(learning_rate(c, 2000), 3.0e-4, 1e-18);
  EXPECT_NEAR(learning_rate(c, 400000), 2.32e-4, 0.005e-4);
  EXPECT_NEAR(learning_rate(c, 597046), 1.65e-4, 1e-18);
  EXPECT_NEAR(learning_rate(c, 800000), 1.254e-4, 0.0005e-4);
  EXPECT_NEAR(learning_rate(c, 1000000), 8.98e-5, 0.005e-5);
  EXPECT_NEAR(learning_rate(c, 1200000), 6.06e-5, 0.005e-5);
  EXPECT_NEAR(learning_rate(c, 1413814), 3.93e-5, 0.005e-5);
}

TEST(Schedule, Olmo3StitchedBitExactWithOlmoCoreFormulas) {
  // Python: CosWithWarmup.get_lr / HalfCosWithWarmup.get_lr (olmo_core/optim/scheduler.py), float repr.
  ScheduleConfig c = olmo3_stage1();
  EXPECT_EQ(learning_rate(c, 1), 1.5e-07);  // warmup rises linearly from 0: 3e-4 * 1 / 2000
  EXPECT_EQ(learning_rate(c, 1000), 0.00015);
  EXPECT_EQ(learning_rate(c, 2000), 0.0002999999999999999);
  EXPECT_EQ(learning_rate(c, 400000), 0.00023209766717435944);
  EXPECT_EQ(learning_rate(c, 596047), 0.00016535619271678472);  // part 1's last step
  EXPECT_EQ(learning_rate(c, 596048), 0.00016472419210580088);  // part 2: 1.65e-4 * 596048 / 597046
  EXPECT_EQ(learning_rate(c, 597046), 0.00016499999999999997);
  EXPECT_EQ(learning_rate(c, 1000000), 8.98340769244571e-05);
  EXPECT_EQ(learning_rate(c, 1413814), 3.93252716718148e-05);
  EXPECT_EQ(learning_rate(c, 1668931), 2.9999999999999997e-05);
}

TEST(Schedule, CosineWarmupAndFloor) {
  ScheduleConfig c;
  c.type = ScheduleType::cosine;
  c.lr = 1e-3;
  c.warmup = 10;
  c.alpha_f = 0.1;
  c.t_max = 110;
  EXPECT_DOUBLE_EQ(learning_rate(c, 1), 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate(c, 5), 5e-4);
  EXPECT_DOUBLE_EQ(learning_rate(c, 10), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(c, 60), 1e-4 + 9e-4 * 0.5);  // cosine midpoint
  EXPECT_DOUBLE_EQ(learning_rate(c, 110), 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate(c, 500), 1e-4);
}

TEST(Schedule, LinearDecayToZeroAsStage2) {
  // LinearWithWarmup(warmup=0, alpha_f=0.0), peak 2.0712352850360292e-4, 47,684 steps.
  ScheduleConfig c;
  c.type = ScheduleType::linear;
  c.lr = 2.0712352850360292e-4;
  c.warmup = 0;
  c.alpha_f = 0.0;
  c.t_max = 47684;
  EXPECT_DOUBLE_EQ(learning_rate(c, 1), c.lr * (1 - 1.0 / 47684));
  EXPECT_DOUBLE_EQ(learning_rate(c, 23842), c.lr / 2);
  EXPECT_EQ(learning_rate(c, 47684), 0.0);
}

TEST(Schedule, Wsd) {
  ScheduleConfig c;
  c.type = ScheduleType::wsd;
  c.lr = 1.0;
  c.warmup = 10;
  c.alpha_f = 0.0;
  c.t_max = 100;
  c.decay = 20;
  EXPECT_DOUBLE_EQ(learning_rate(c, 5), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate(c, 10), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(c, 79), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(c, 80), 1.0);  // decay starts at t_max - decay: min(20, 20) / 20
  EXPECT_DOUBLE_EQ(learning_rate(c, 90), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate(c, 100), 0.0);
}

TEST(Schedule, HalfCosineStartsAtTheMidpoint) {
  ScheduleConfig c;
  c.type = ScheduleType::half_cosine;
  c.lr = 1.0;
  c.warmup = 10;
  c.alpha_f = 0.0;
  c.t_max = 110;
  EXPECT_DOUBLE_EQ(learning_rate(c, 5), 0.25);  // warmup towards the midpoint 0.5
  EXPECT_DOUBLE_EQ(learning_rate(c, 10), 0.5);
  EXPECT_NEAR(learning_rate(c, 60), (1 + std::cos(M_PI * 0.75)) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(learning_rate(c, 110), 0.0);
}

TEST(Schedule, ConstantWithWarmup) {
  ScheduleConfig c;
  c.type = ScheduleType::constant;
  c.lr = 2e-3;
  c.warmup = 4;
  EXPECT_DOUBLE_EQ(learning_rate(c, 1), 5e-4);
  EXPECT_DOUBLE_EQ(learning_rate(c, 4), 2e-3);
  EXPECT_DOUBLE_EQ(learning_rate(c, 1000000), 2e-3);
  c.warmup = 0;
  EXPECT_DOUBLE_EQ(learning_rate(c, 1), 2e-3);
}

TEST(Schedule, TypeNamesAndValidation) {
  for (const char* name : {"constant", "cosine", "linear", "wsd", "half_cosine", "olmo3_stitched"})
    EXPECT_STREQ(schedule_type_name(parse_schedule_type(name)), name);
  EXPECT_THROW(parse_schedule_type("cosine_with_restarts"), Error);
  ScheduleConfig c;
  c.t_max = 100;
  c.warmup = 100;
  try {
    validate(c);
    FAIL() << "expected replica::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("warmup_steps"), std::string::npos) << e.what();
  }
  c.type = ScheduleType::wsd;
  c.warmup = 10;
  c.decay = 0;
  EXPECT_THROW(validate(c), Error);
}

}  // namespace
}  // namespace replica::optim
