// The memory `replica reproduce` plans to hold at its peak, printed before it loads anything: one model at a time
// (its fp32 weights, their bf16 copy in bf16 precision, the activations of one forward of the suite's batch, the
// LM-head scratch of a row chunk); the reference's logits live on disk, never in memory.
#pragma once
#include <cstdint>
#include <vector>

#include "replica/dist/memory_plan.h"
#include "replica/model/config.h"

namespace replica::reproduce {

std::vector<dist::MemoryItem> peak_memory(const model::ModelConfig& config, Precision precision, int64_t batch_tokens);

}  // namespace replica::reproduce
