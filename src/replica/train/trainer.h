// The training loop: data order → this rank's micro-batches → one TrainStep (gradients, clipping, skip-step,
// AdamW with the scheduled LR) → observers: metrics.jsonl, TensorBoard scalars and a progress line, held-out loss
// every eval.every steps, checkpoints every checkpoint.every steps and at the end; a run resumes from its newest
// checkpoint. SIGINT/SIGTERM finish the current step, save a checkpoint and stop without the final evaluation.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "replica/distributed/communicator.h"
#include "replica/train/recipe.h"

namespace replica::train {

struct TrainSummary {
  std::string run_dir = "";
  int64_t steps = 0;               // optimizer steps taken (skipped ones included)
  std::optional<double> final_loss = std::nullopt;  // training loss of the last step (none: no step ran)
  // Held-out loss before the first step, from metrics.jsonl after a resume (none: no evaluation).
  std::optional<double> heldout_initial = std::nullopt;
  std::optional<double> heldout_final = std::nullopt;
  bool interrupted = false;   // stopped before the last step, its checkpoint saved: a signal or train.max_seconds
  bool by_signal = false;     // the stop was a signal (exit 130); else the time budget (exit 0)
};

// Runs the recipe as rank comm.rank() of comm.size() (LocalCommunicator: one process) on the backend of
// train.device. Every rank returns the same steps and losses; only rank 0 writes the run directory and
// evaluates.
TrainSummary train(const Recipe& recipe, distributed::Communicator& comm);
// The same on a given backend (tests run the trainer on an emulated device).
TrainSummary train(const Recipe& recipe, distributed::Communicator& comm, Backend& backend);

}  // namespace replica::train
