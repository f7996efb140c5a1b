// Generation's context: the keys and values of every position a sequence has been fed so far, per layer, in backend
// memory, as a ContextAttention strategy of the one forward (model/context_attention.h): a pass of n new tokens
// (the prompt, then each new token) runs the Transformer's blocks on those rows only, and its attention reads the
// earlier positions from here. A full-attention layer keeps every position, a sliding-window layer a ring of W slots
// (the key of position j in slot j % W), which is all that attention at any later position reads. Layout per layer:
// [capacity, K, D], keys after QK-norm and RoPE.
#pragma once
#include <cstdint>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/config.h"
#include "replica/model/context_attention.h"

namespace replica::model {

class KvCache final : public ContextAttention {
 public:
  // Room for positions 0 … max_positions − 1.
  KvCache(const ModelConfig& config, int64_t max_positions, Backend& backend);

  struct Layer {
    DeviceArray<float> k, v;
    int64_t capacity;  // slots: min(W, max_positions) on a sliding layer, max_positions on a full one
  };
  const Layer& layer(int64_t l) const { return layers_[size_t(l)]; }

  // Stores k, v [n, K, D], the keys and values of positions position … position + n − 1 of layer l; in a ring, only
  // the last `capacity` of them (earlier ones would be overwritten at once).
  void store(int64_t l, const float* k, const float* v, int64_t position, int64_t n);

  int64_t max_positions() const { return max_positions_; }
  size_t bytes() const;  // backend memory held

  // ---- as a ContextAttention ----------------------------------------------------------------------------------
  // Positions stored so far: the first of the next pass.
  int64_t position() const override { return stored_; }
  RopeRows rope_rows(int64_t) const override { return {0, max_positions_}; }
  // The pass's new queries over the cache and their own keys (Backend::cached_attention, fp32 whatever the
  // precision and kernel), then their keys and values stored: after the attention, because in a ring a new key may
  // take the slot of one that an earlier new query still reads. lse is not written.
  void forward(int64_t layer, float* out, float* lse, const float* q, const float* k, const float* v,
               const AttentionShape& local, Precision precision, AttentionKernel kernel) override;
  // Generation has no backward: a replica::Error.
  void backward(int64_t layer, float* dq, float* dk, float* dv, const float* dout, const float* out,
                const float* lse, const float* q, const float* k, const float* v, const AttentionShape& local,
                Precision precision, AttentionKernel kernel) override;
  // After a pass through every layer: its n tokens count as stored, and the next pass starts after them.
  void advance(int64_t n);

 private:
  Backend& be_;
  int64_t max_positions_, row_;  // row_ = K·D floats per position
  int64_t stored_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace replica::model
