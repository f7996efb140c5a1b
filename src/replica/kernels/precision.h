// How the kernels round their operands: the GEMM precision a recipe chooses (train.precision), and WeightRef, an
// operand's fp32 values with, in bf16, its rounded copy. Header-only types, so the CUDA library and the standalone
// GPU checks (tests/gpu) use them without libreplica; the names are parsed in precision.cc.
#pragma once
#include "replica/core/bf16.h"

namespace replica {

// GEMM precision: bf16 rounds both operands to bfloat16 and accumulates in fp32 (as autocast does);
// outputs are always fp32.
enum class Precision { fp32, bf16 };

const char* precision_name(Precision p);
Precision parse_precision(const char* text);  // "fp32" | "bf16", else replica::Error

// A weight matrix operand: its fp32 values and, in bf16 precision, optionally the same values rounded
// (weights are rounded once per step, not per product).
struct WeightRef {
  WeightRef(const float* values, const bf16* rounded = nullptr, uint64_t generation = 0)
      : f32(values), b16(rounded), generation(generation) {}
  const float* f32;
  const bf16* b16;
  // Unique in the process to the values behind b16 (0: not known): while it stays, a kernel may keep what it derived
  // from them (the narrow LM head its packed copy, across a step's micro-batches).
  uint64_t generation;
};

}  // namespace replica
