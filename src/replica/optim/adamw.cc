// AdamW: the chunks of the shard, the step's scalars (kernels/cpu/adamw.h) and the backend's update.
#include "replica/optim/adamw.h"

#include <algorithm>

#include "replica/core/error.h"
#include "replica/kernels/cpu/adamw.h"

namespace replica {

static constexpr size_t kChunk = 1 << 15;  // floats per parallel work unit

AdamW::AdamW(const ParamTable& table, AdamWConfig config, size_t begin, size_t end, Backend& backend)
    : config_(config), be_(backend), begin_(std::min(begin, table.total())), end_(std::min(end, table.total())) {
  check(begin_ <= end_, "AdamW: shard [{}, {}) is empty or reversed", begin, end);
  exp_avg_ = DeviceArray<float>(be_, end_ - begin_);
  exp_avg_sq_ = DeviceArray<float>(be_, end_ - begin_);
  std::vector<AdamWChunk> chunks;
  for (const ParamEntry& e : table.entries()) {
    const size_t lo = std::max(e.offset, begin_), hi = std::min(e.offset + e.numel, end_);
    for (size_t b = lo; b < hi; b += kChunk)
      chunks.push_back({b, std::min(b + kChunk, hi), e.kind != ParamKind::embedding});
  }
  chunks_ = DeviceArray<AdamWChunk>(be_, chunks.size());
  be_.to_device(chunks_.data(), chunks.data(), chunks.size() * sizeof(AdamWChunk));
}

void AdamW::step(float* params, const float* grads, double lr) {
  step_count++;
  const AdamWConfig& c = config_;
  const AdamWScalars s = adamw_scalars(c.beta1, c.beta2, c.eps, c.weight_decay, step_count, lr);
  be_.adamw_step(params, grads, exp_avg_.data(), exp_avg_sq_.data(), begin_, chunks_.data(),
                 int64_t(chunks_.size()), s);
}

void AdamW::moments_to_host(float* exp_avg, float* exp_avg_sq) const {
  be_.to_host(exp_avg, exp_avg_.data(), exp_avg_.size() * sizeof(float));
  be_.to_host(exp_avg_sq, exp_avg_sq_.data(), exp_avg_sq_.size() * sizeof(float));
}

void AdamW::moments_from_host(const float* exp_avg, const float* exp_avg_sq) {
  be_.to_device(exp_avg_.data(), exp_avg, exp_avg_.size() * sizeof(float));
  be_.to_device(exp_avg_sq_.data(), exp_avg_sq, exp_avg_sq_.size() * sizeof(float));
}

}  // namespace replica
