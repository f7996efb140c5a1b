// metrics.jsonl, stated once: one JSON object per line (DESIGN.md §4), under the names the trainer writes
// (train/metrics_sinks.cc) and every reader reads (report/metrics_jsonl.cc, the held-out summary of a resumed run,
// resume's truncation of the log to its checkpoint). Doubles are written in their shortest round-trip form.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

namespace replica::metrics::jsonl {

// Every line.
inline constexpr const char* kStep = "step";  // optimizer steps done (an evaluation's: the steps before it)
inline constexpr const char* kTime = "time";  // seconds since the Unix epoch, to the millisecond

// A training line, one per step: kTrainMetrics (skipped is a boolean, mfu a fraction of the peak or null) and the
// position and timing beside them.
inline constexpr const char* kTrainMetrics[] = {"loss",      "ce",      "z_loss",       "lr",
                                                "grad_norm", "skipped", "tokens_per_s", "mfu"};
inline constexpr const char* kLoss = "loss";  // = ce + z_loss; the key that makes a line a training line
inline constexpr const char* kCe = "ce";
inline constexpr const char* kZLoss = "z_loss";
inline constexpr const char* kLr = "lr";
inline constexpr const char* kGradNorm = "grad_norm";
inline constexpr const char* kSkipped = "skipped";
inline constexpr const char* kTokensPerSecond = "tokens_per_s";
inline constexpr const char* kMfu = "mfu";
inline constexpr const char* kTokens = "tokens";
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kBatch = "batch";
inline constexpr const char* kCommSeconds = "comm_s";
inline constexpr const char* kStepSeconds = "step_s";

// An evaluation line: kEval holds the held-out loss over all files, its tokens, the loss per file label, the suite's
// results (eval/suite.h) and the memorisation alarm's report when it fired; kEvalSeconds beside it.
inline constexpr const char* kEval = "eval";
inline constexpr const char* kHeldoutLoss = "heldout_loss";
inline constexpr const char* kHeldoutTokens = "heldout_tokens";
inline constexpr const char* kFiles = "files";
inline constexpr const char* kEvalSeconds = "eval_s";  // beside kEval on its line: timing is not a result
inline constexpr const char* kSuite = "suite";
inline constexpr const char* kAlarm =
    "memorisation_alarm";  // {"from_step", "train_loss": [a, b], "heldout_loss": [a, b]}

// The step of a line, or none when it is not an object with an integer step.
inline std::optional<int64_t> step_of(const nlohmann::json& line) {
  if (!line.is_object() || !line.contains(kStep) || !line.at(kStep).is_number_integer()) return std::nullopt;
  return line.at(kStep).get<int64_t>();
}

}  // namespace replica::metrics::jsonl
