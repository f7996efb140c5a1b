// Generation's forward pass: one sequence fed a few tokens at a time (the prompt, then each new token), every
// position's keys and values kept in a KvCache so that no position is computed twice. The model is the
// Transformer's (model/transformer.cc states the blocks), run forward only, on any Backend; only the last
// position's logits are computed.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/config.h"
#include "replica/model/kv_cache.h"
#include "replica/model/params.h"
#include "replica/model/rope.h"
#include "replica/model/weight_source.h"

namespace replica::model {

class Decoder {
 public:
  // `weights`: ParamTable(config).total() floats of backend memory. Room for positions 0 … max_positions − 1, at
  // most the model's max_position_embeddings (else replica::Error).
  Decoder(const ModelConfig& config, const float* weights, Precision precision, int64_t max_positions,
          Backend& backend);
  ~Decoder();

  // Runs `ids` at the next positions, keeps their keys and values, and returns the logits [V] after the last of
  // them (host memory, valid until the next call). Ids outside the vocabulary, or more than the room left, are a
  // replica::Error.
  std::span<const float> append(std::span<const int32_t> ids);

  int64_t position() const { return position_; }  // tokens appended so far
  int64_t max_positions() const { return cache_.max_positions(); }
  const KvCache& cache() const { return cache_; }
  const ModelConfig& config() const { return config_; }

 private:
  struct Scratch;  // activations of the rows being appended
  void block(const GroupWeights& P, int64_t layer, int64_t n);
  // The input of a branch's sublayer: norm(x) with pre-norm (Llama), x itself with reordered norms (OLMo 2/3).
  const float* branch_input(const GroupWeights& P, size_t norm, const float* x, int64_t n);
  // x += sublayer, normed first with reordered norms.
  void branch_output(const GroupWeights& P, size_t norm, float* x, const float* sublayer, int64_t n);
  GroupWeights acquire(ParamTable::Range range) { return weights_.acquire(range, precision_); }

  ModelConfig config_;
  ParamTable table_;
  Precision precision_;
  Backend& be_;
  WholeWeights weights_;
  RopeBuffers rope_, yarn_;  // as the Transformer has them (model/rope.h)
  KvCache cache_;
  std::unique_ptr<Scratch> scratch_;
  int64_t position_ = 0;
  std::vector<float> logits_;
};

}  // namespace replica::model
