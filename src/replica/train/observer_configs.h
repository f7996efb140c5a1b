// The loop's observers' own sections of the recipe: each observer is given its section, not the whole Recipe, and
// the recipe's keys point into these (train/recipe.cc).
#pragma once
#include <cstdint>
#include <string>

namespace replica::train {

// checkpoint.*: CheckpointObserver's cadence and the saver's retention.
struct CheckpointConfig {
  int64_t every = 1000;  // 0 = only at the end
  int64_t keep = 0;      // newest checkpoints kept; 0 = all
};

// eval.every, eval.batches, eval.suite: EvalObserver's cadence and what it evaluates.
struct EvalConfig {
  int64_t every = 0;    // also before the first and after the last step; 0 = no evaluation at all
  int64_t batches = 0;  // held-out documents per file and evaluation = batches × micro_batch_size; 0 = all
  std::string suite;    // eval suite YAML run at each evaluation besides the held-out loss; empty = none
};

// eval.alarm_window, eval.alarm_margin: AlarmObserver's memorisation alarm (eval/alarm.h).
struct AlarmConfig {
  int64_t window = 3;    // evaluations compared (0 = off)
  double margin = 0.05;  // nats: training loss fell more than this, held-out loss did not
};

}  // namespace replica::train
