// The OLMo 3 transformer (and its OLMo 2 / Llama-like variants) on the CPU: forward and backward over
// one flat fp32 parameter buffer laid out by ParamTable. Every layer's backward is hand-written beside
// its forward in kernels/cpu; this file wires them into blocks and the model.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/lm_head_loss.h"
#include "replica/kernels/cpu/rope.h"
#include "replica/model/config.h"
#include "replica/model/params.h"

namespace replica {

// Activation recomputation: `none` keeps every block's activations for the backward pass; `block` keeps
// only each block's input and recomputes the block's forward just before its backward.
enum class Remat { none, block };
Remat parse_remat(const std::string& text);

// One micro-batch: ids and targets are [B, T]; a target of kIgnoreLabel has no loss.
struct Batch {
  const int32_t* ids;
  const int32_t* targets;
  int64_t B, T;
};

// OLMo-core labels: targets[t] = ids[t + 1] within each instance; the last position has no label.
std::vector<int32_t> shifted_targets(const int32_t* ids, int64_t B, int64_t T);

class Olmo3 {
 public:
  Olmo3(ModelConfig config, Precision precision = Precision::fp32, Remat remat = Remat::none);
  ~Olmo3();

  const ModelConfig& config() const { return config_; }
  const ParamTable& table() const { return table_; }
  Precision precision() const { return precision_; }

  // Forward and backward of one micro-batch. Gradients of (Σ ce + z_coef · Σ z) · grad_scale are
  // added to `grads` (same layout as params); pass grad_scale = 1 / labels in the optimizer batch.
  LossSums forward_backward(const float* params, float* grads, const Batch& batch, float z_coef, float grad_scale);
  // Loss sums only (evaluation).
  LossSums forward_loss(const float* params, const Batch& batch, float z_coef);
  // Full logits [B, T, V] (the parity hook; not for training).
  void forward_logits(const float* params, const int32_t* ids, int64_t B, int64_t T, float* logits);
  // Hidden states after the final norm [B, T, C], valid until the next call; evaluation applies the LM
  // head (lm_head_weight(), this call's weights, bf16-rounded in bf16) only to the rows it scores.
  const float* forward_hidden(const float* params, const int32_t* ids, int64_t B, int64_t T);
  WeightRef lm_head_weight() const { return W(table_.lm_head); }

  // Bytes of activation memory one micro-batch of [B, T] needs under `remat` (for the memory plan).
  static size_t activation_bytes(const ModelConfig& config, Remat remat, int64_t B, int64_t T);

 private:
  struct Workspace;
  struct BlockActs;
  void prepare(int64_t B, int64_t T, bool for_training);
  void check_ids(const int32_t* ids, int64_t n) const;
  // Remembers this call's parameters and, in bf16, rounds them once so every GEMM reuses the copy.
  void round_weights(const float* params);
  WeightRef W(size_t offset) const;  // the weight matrix at `offset` as a GEMM operand
  void forward_to_final_norm(const float* params, const int32_t* ids, bool keep_all);
  void block_forward(const float* params, int64_t layer, const float* x, float* out, BlockActs& a);
  void block_backward(const float* params, float* grads, int64_t layer, const float* x, BlockActs& a, float* dres);

  ModelConfig config_;
  ParamTable table_;
  Precision precision_;
  Remat remat_;
  std::unique_ptr<Workspace> ws_;
  const float* params_ = nullptr;
  std::vector<bf16> params16_;
};

}  // namespace replica
