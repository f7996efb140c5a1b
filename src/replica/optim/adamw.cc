// AdamW: the chunks of the shard, the step's scalars (kernels/adamw.h) and the backend's update.
#include "replica/optim/adamw.h"

#include <algorithm>
#include <cstring>

#include "replica/core/error.h"
#include "replica/kernels/adamw.h"

namespace replica::optim {

static constexpr size_t kChunk = 1 << 15;  // floats per parallel work unit

AdamW::AdamW(const model::ParamTable& table, AdamWConfig config, std::vector<Part> parts, Backend& backend)
    : config_(config), be_(backend) {
  std::vector<AdamWChunk> chunks;
  size_t floats = 0, covered = 0;
  for (const Part& p : parts) {
    check(covered <= p.begin && p.begin <= p.end && p.end <= table.total(),
          "AdamW: part [{}, {}) overlaps the previous one or is not inside the {} floats", p.begin, p.end,
          table.total());
    covered = p.end;
    check(p.offset == floats, "AdamW: part [{}, {}) is not stored right after the previous one", p.begin, p.end);
    floats += p.end - p.begin;
    PartChunks pc{p, chunks.size(), 0};
    for (const model::ParamEntry& e : table.entries()) {
      const size_t lo = std::max(e.offset, p.begin), hi = std::min(e.offset + e.numel, p.end);
      for (size_t b = lo; b < hi; b += kChunk)
        chunks.push_back({b, std::min(b + kChunk, hi), e.kind != model::ParamKind::embedding});
    }
    pc.count = chunks.size() - pc.first;
    parts_.push_back(pc);
  }
  const Memory memory = config.host_moments ? Memory::host : Memory::device;
  exp_avg_ = BackendArray<float>(be_, floats, memory);
  exp_avg_sq_ = BackendArray<float>(be_, floats, memory);
  chunks_ = DeviceArray<AdamWChunk>(be_, chunks.size());
  be_.to_device(chunks_.data(), chunks.data(), chunks.size() * sizeof(AdamWChunk));
  host_chunks_ = std::move(chunks);
}

// One backend call per part: the kernels index the shard's arrays from the part's first element (shard_begin), so
// the arrays are passed from the part's offset, and whole-buffer weights from the part's flat start.
void AdamW::step(float* params, const float* grads, double lr, bool whole_params, float grad_scale) {
  step_count_++;
  const AdamWConfig& c = config_;
  AdamWScalars s = adamw_scalars(c.beta1, c.beta2, c.eps, c.weight_decay, step_count_, lr);
  s.grad_scale = grad_scale;
  for (const PartChunks& pc : parts_) {
    const Part& p = pc.part;
    float* const weights = params + (whole_params ? p.begin : p.offset);
    const AdamWChunk* const chunks = chunks_.data() + pc.first;
    if (config_.host_moments)
      be_.adamw_step_host_moments(weights, grads + p.offset, exp_avg() + p.offset, exp_avg_sq() + p.offset, p.begin,
                                  chunks, {host_chunks_.data() + pc.first, pc.count}, s);
    else
      be_.adamw_step(weights, grads + p.offset, exp_avg() + p.offset, exp_avg_sq() + p.offset, p.begin, chunks,
                     int64_t(pc.count), s);
  }
}

void AdamW::state_to_host(size_t i, float* host) const {
  check(i < 2, "AdamW has two state tensors, not {}", i + 1);
  const float* state = i == 0 ? exp_avg() : exp_avg_sq();
  if (!config_.host_moments) return be_.to_host(host, state, size() * sizeof(float));
  be_.synchronize();  // the last update's copies back
  std::memcpy(host, state, size() * sizeof(float));
}

void AdamW::state_from_host(size_t i, const float* host) {
  check(i < 2, "AdamW has two state tensors, not {}", i + 1);
  float* state = i == 0 ? exp_avg() : exp_avg_sq();
  if (!config_.host_moments) return be_.to_device(state, host, size() * sizeof(float));
  be_.synchronize();  // no update still copying
  std::memcpy(state, host, size() * sizeof(float));
}

}  // namespace replica::optim
