// A run's state between ranks (what one process decides and records is train/checkpointing.h): rank 0 alone decides
// where a run starts (start_run: it cleans up and reads checkpoints) and every rank receives the same weights,
// optimizer state and skip-step history; rank 0 alone saves checkpoints, with each optimizer state tensor (and
// sharded weights) gathered from every shard (checkpoints hold whole tensors, so a run saved at W ranks resumes at any
// other W, with or without sharded weights); and the communicator that moves backend memory between ranks.
#pragma once
#include <memory>
#include <optional>

#include "replica/ckpt/saver.h"
#include "replica/train/checkpointing.h"
#include "replica/train/step.h"

namespace replica::train {

// The communicator that moves backend memory between ranks: null when `control` itself does (one rank, or
// the CPU); NCCL for several ranks on GPUs (raises replica::Error in a build without NCCL).
std::unique_ptr<distributed::Communicator> connect_data(distributed::Communicator& control, Backend& backend);

// start_run() on rank 0, then its result shared with every rank: the step's weights (all of them, or its shard), its
// shard of the optimizer state loaded from rank 0 (other ranks never hold more than that) and the skip-step history.
RunStart start_run_all_ranks(const Recipe& recipe, TrainStep& step, const data::DataLoader& loader);

// Gathers the weights and optimizer state to rank 0, which starts saving them with `state` (world_size set); other
// ranks only take part in the gathers.
std::optional<ckpt::SaveResult> save_from_rank0(ckpt::CheckpointSaver& saver, TrainStep& step, ckpt::TrainState state);

}  // namespace replica::train
