// The memory `replica reproduce` plans to hold at its peak, printed before it loads anything: one model at a time
// (resident: its fp32 weights, and their bf16 copy in bf16 precision; streamed: the largest group of weights a forward
// holds, ckpt/streamed_weights.h), the activations of one evaluation forward of the suite's batch, the LM-head
// scratch of a row chunk; the reference's logits live on disk, never in memory.
#pragma once
#include <cstdint>
#include <vector>

#include "replica/distributed/memory_plan.h"
#include "replica/model/config.h"
#include "replica/reproduce/checkpoint_evaluation.h"

namespace replica::reproduce {

std::vector<distributed::MemoryItem> peak_memory(const model::ModelConfig& config, Precision precision,
                                                 int64_t batch_tokens, WeightsMode mode);

}  // namespace replica::reproduce
