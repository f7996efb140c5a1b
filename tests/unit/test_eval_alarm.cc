// The memorisation alarm on synthetic curves: silent while both losses fall, silent before training, fires
// when training loss falls by more than the margin over the window while held-out loss does not.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "replica/core/error.h"
#include "replica/eval/alarm.h"

using namespace replica::eval;

TEST(EvalAlarm, FiresOnlyWhenTrainingFallsAndHeldoutStalls) {
  MemorisationAlarm alarm(2, 0.05);
  EXPECT_FALSE(alarm.evaluation(0, 11.0));  // before any training step: not a point
  const double train[] = {9.0, 7.0, 5.0, 4.0, 3.0, 2.0};
  const double heldout[] = {9.2, 7.3, 5.5, 5.48, 5.6, 5.7};
  std::vector<int64_t> fired;
  for (int i = 0; i < 6; i++) {
    alarm.add_train_loss(train[i] + 0.1);
    alarm.add_train_loss(train[i] - 0.1);  // the mean of the steps since the last evaluation
    if (auto a = alarm.evaluation(10 * (i + 1), heldout[i])) {
      fired.push_back(a->step);
      EXPECT_EQ(a->first_step, 10 * (i - 1));
      EXPECT_DOUBLE_EQ(a->train_now, train[i]);
      EXPECT_DOUBLE_EQ(a->heldout_now, heldout[i]);
      EXPECT_NE(a->message().find("held-out loss went"), std::string::npos);
    }
  }
  // At step 40 held-out fell 7.3 → 5.48 (more than the margin): silent. From step 50 it stalls: alarm.
  EXPECT_EQ(fired, (std::vector<int64_t>{50, 60}));
  MemorisationAlarm off(0, 0.05);
  off.add_train_loss(1.0);
  EXPECT_FALSE(off.evaluation(1, 1.0));
}

// A resume hands the alarm its saved state: split anywhere, even between two training steps of one evaluation
// interval, the alarm fires where the uninterrupted one does, with the same numbers.
TEST(EvalAlarm, ItsStateThroughAJsonRoundTripFiresAsTheUninterruptedAlarm) {
  const double train[] = {9.0, 7.0, 5.0, 4.0, 3.0, 2.0};
  const double heldout[] = {9.2, 7.3, 5.5, 5.48, 5.6, 5.7};
  auto run = [&](int split) {  // split: the number of add/evaluation calls before the "resume"
    std::vector<std::string> out;
    auto alarm = std::make_unique<MemorisationAlarm>(2, 0.05);
    int calls = 0;
    for (int i = 0; i < 6; i++)
      for (int k = 0; k < 3; k++) {
        if (calls++ == split) {
          const std::string saved = alarm->to_json().dump();
          alarm = std::make_unique<MemorisationAlarm>(2, 0.05);
          alarm->load_json(nlohmann::json::parse(saved), "train_state.json");
        }
        if (k < 2) alarm->add_train_loss(train[i] + (k == 0 ? 0.1 : -0.1));
        else if (auto a = alarm->evaluation(10 * (i + 1), heldout[i])) out.push_back(a->message());
      }
    return out;
  };
  const std::vector<std::string> whole = run(-1);
  ASSERT_EQ(whole.size(), 2u);
  for (int split = 0; split < 18; split++) EXPECT_EQ(run(split), whole) << "resumed after call " << split;
  MemorisationAlarm fresh(2, 0.05);
  EXPECT_THROW(fresh.load_json(nlohmann::json{{"points", 3}}, "x"), replica::Error);
}
