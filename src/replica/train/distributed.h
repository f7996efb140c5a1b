// The trainer's data-parallel glue: rank 0 alone decides where a run starts (it cleans up and reads
// checkpoints) and every rank receives the same weights, optimizer state and skip-step history; rank 0
// alone saves checkpoints, with the Adam moments (and sharded weights) gathered from every shard (checkpoints
// hold whole tensors, so a run saved at W ranks resumes at any other W, with or without sharded weights).
#pragma once
#include <memory>
#include <optional>

#include "replica/ckpt/saver.h"
#include "replica/dist/data_parallel.h"
#include "replica/model/olmo3.h"
#include "replica/train/checkpointing.h"

namespace replica {

// The communicator that moves backend memory between ranks: null when `control` itself does (one rank, or
// the CPU); NCCL for several ranks on GPUs (raises replica::Error in a build without NCCL).
std::unique_ptr<Communicator> connect_data(Communicator& control, Backend& backend);

// The weights `model` reads in a step: this rank's whole buffer through the model's own view (each call marks its
// bf16 copy stale, so call it once per step), or with sharded weights the groups gathered from the shards.
WeightSource& step_weights(DataParallel& dp, Olmo3& model);

// start_run() on rank 0, then its result shared with every rank: dp's weights (all of them, or its shard) and its
// shard of the moments loaded from rank 0 (other ranks never hold more than that).
RunStart start_run_all_ranks(const Recipe& recipe, DataParallel& dp, const ParamTable& table,
                             const data::DataLoader& loader, SkipStep& skip_step);

// Gathers the weights and moments to rank 0, which starts saving them with `state` (world_size set); other ranks
// only take part in the gathers.
std::optional<SaveResult> save_from_rank0(CheckpointSaver& saver, DataParallel& dp, const ParamTable& table,
                                          TrainState state);

}  // namespace replica
