// KvCache: per-layer capacities, stores that wrap around a ring in at most two copies per tensor, and the cached
// attention of a pass.
#include "replica/model/kv_cache.h"

#include <algorithm>

#include "replica/core/error.h"

namespace replica::model {

KvCache::KvCache(const ModelConfig& config, int64_t max_positions, Backend& backend)
    : be_(backend), max_positions_(max_positions), row_(config.kv_width()) {
  for (int64_t l = 0; l < config.n_layers; l++) {
    const int64_t window = config.window(l);
    const int64_t capacity = window > 0 ? std::min(window, max_positions) : max_positions;
    const size_t floats = size_t(capacity * row_);
    layers_.push_back({DeviceArray<float>(backend, floats), DeviceArray<float>(backend, floats), capacity});
  }
}

void KvCache::store(int64_t l, const float* k, const float* v, int64_t position, int64_t n) {
  Layer& layer = layers_[size_t(l)];
  const int64_t end = position + n;
  for (int64_t j = std::max(position, end - layer.capacity); j < end;) {
    const int64_t slot = j % layer.capacity, run = std::min(end - j, layer.capacity - slot);
    be_.copy(layer.k.data() + slot * row_, k + (j - position) * row_, size_t(run * row_));
    be_.copy(layer.v.data() + slot * row_, v + (j - position) * row_, size_t(run * row_));
    j += run;
  }
}

size_t KvCache::bytes() const {
  size_t total = 0;
  for (const Layer& layer : layers_) total += (layer.k.size() + layer.v.size()) * sizeof(float);
  return total;
}

void KvCache::forward(int64_t layer, float* out, float*, const float* q, const float* k, const float* v,
                      const AttentionShape& local, Precision, AttentionKernel) {
  const int64_t n = local.T;
  check(local.B == 1 && stored_ + n <= max_positions_, "the KV cache holds {} positions, {} stored, {} more given",
        max_positions_, stored_, n);
  const Layer& cached = layers_[size_t(layer)];
  const CachedAttentionShape shape{n, stored_, local.H, local.K, local.D, local.window, cached.capacity};
  be_.cached_attention(out, q, k, v, cached.k.data(), cached.v.data(), shape);
  store(layer, k, v, stored_, n);
}

void KvCache::backward(int64_t, float*, float*, float*, const float*, const float*, const float*, const float*,
                       const float*, const float*, const AttentionShape&, Precision, AttentionKernel) {
  fail("a KV cache serves generation, which has no backward pass");
}

void KvCache::advance(int64_t n) {
  check(n >= 0 && stored_ + n <= max_positions_, "the KV cache holds {} positions, {} stored, {} more given",
        max_positions_, stored_, n);
  stored_ += n;
}

}  // namespace replica::model
