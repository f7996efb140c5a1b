// The repeat audit: replays the loader for a whole planned run (every step, rank and micro-batch, without
// the model) and counts how often each instance is delivered. An instance delivered twice within one
// planned epoch is a loader bug (MaxText's double sharding showed ~26 % of its corpus twice).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "replica/data/loader.h"

namespace replica::data {

struct AuditPlan {
  int64_t steps = 0;   // optimizer steps in the planned run
  int world_size = 1;  // data-parallel ranks
  // Instances per micro-batch (DataLoader::batch); none: the whole rank batch.
  std::optional<int64_t> micro_batch = std::nullopt;
  uint64_t first_epoch = 1;
};

// The instance ids `rank` reads at `step`. The default replays DataLoader; tests substitute a buggy one.
using RankReader = std::function<std::vector<uint32_t>(int64_t step, int rank)>;

struct AuditReport {
  int64_t batches_per_epoch = 0;
  uint64_t num_instances = 0;         // in the dataset (before truncation to whole batches)
  uint64_t deliveries = 0;            // instance reads over the run
  uint64_t seen[4] = {0, 0, 0, 0};    // instances seen 0, 1, 2, 3+ times over the run
  uint64_t repeats_within_epoch = 0;  // reads of an instance already read in the same planned epoch
  double expected_epochs = 0;         // steps / batches per epoch
  double actual_epochs = 0;           // deliveries / distinct instances delivered
  std::vector<std::pair<std::string, uint64_t>> tokens_per_source;  // label -> tokens delivered
  uint64_t padding_tokens = 0;                                      // pad tokens delivered (packed mixes)
  bool ok() const { return repeats_within_epoch == 0; }
  double repeat_fraction() const { return deliveries ? double(repeats_within_epoch) / double(deliveries) : 0; }
  std::string text() const;  // the human-readable report
};

AuditReport audit(const DataLoader& loader, const AuditPlan& plan, const RankReader& reader = nullptr);

}  // namespace replica::data
