// What one rank of a training step needs and how long the step takes: `replica plan`'s per-rank memory, its
// fits / does-not-fit verdict against a GPU's memory, the nearest layout that fits, and its time estimate.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replica/distributed/memory_plan.h"
#include "replica/model/config.h"
#include "replica/train/step_config.h"

namespace replica::train {

// Memory per rank of `step` over `ranks` ranks (a multiple of step.context.degree), by component, as TrainStep
// allocates it: distributed::data_parallel_memory with the step's weight sharding and optimizer state (one array per
// name in optim::state_names(step.optimizer), on the host with optim.host_moments), the activations of one micro-batch
// of this rank's slice of each sequence (step_activation_bytes), and under context parallelism the gathered keys and
// values (distributed::context_parallel_memory).
std::vector<distributed::MemoryItem> rank_memory(const model::ModelConfig& model, const StepConfig& step, int64_t ranks);

// A GPU's memory as given: "80GB", "80 GB" or a bare "80" are GB (10^9 bytes, as datasheets count), "74.5GiB" is
// GiB (2^30 bytes). replica::Error naming `what` and the expected form otherwise.
double parse_memory_size(const std::string& text, const std::string& what);

// The layout nearest to `step` whose rank fits in `capacity` bytes at `ranks` ranks: the least recomputation first
// (none, selective, keep_attention, block: the order of the work each adds), and at each, whole weights before
// sharded ones (sharding gathers every group twice per micro-batch). Only remat and train.shard_weights change;
// none when no such layout fits.
std::optional<StepConfig> nearest_layout_that_fits(const model::ModelConfig& model, const StepConfig& step,
                                                   int64_t ranks, double capacity);

// One optimizer step's model FLOPs: G instances of T tokens at model::training_flops_per_token (replica's
// convention: recomputation is not counted, so it shows as a lower MFU).
double step_flops(const model::ModelConfig& model, const StepConfig& step);

// Seconds per optimizer step when `ranks` GPUs each run at `mfu` (a fraction) of `peak_flops` FLOP/s.
double step_seconds(const model::ModelConfig& model, const StepConfig& step, int64_t ranks, double mfu,
                    double peak_flops);

}  // namespace replica::train
