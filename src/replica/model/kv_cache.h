// The keys and values a Decoder has computed, per layer, in backend memory: a full-attention layer keeps every
// position, a sliding-window layer a ring of W slots (the key of position j in slot j % W), which is all that
// attention at any later position reads. Layout per layer: [capacity, K, D], keys after RoPE.
#pragma once
#include <cstdint>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/model/config.h"

namespace replica::model {

class KvCache {
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

 private:
  Backend& be_;
  int64_t max_positions_, row_;  // row_ = K·D floats per position
  std::vector<Layer> layers_;
};

}  // namespace replica::model
