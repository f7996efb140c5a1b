// SGD: the momentum buffer and the update from the backend's elementwise calls, a piece of a part at a time.
#include "replica/optim/sgd.h"

#include <algorithm>

#include "replica/core/error.h"

namespace replica::optim {

static constexpr size_t kPiece = size_t(1) << 20;  // floats of −lr · direction held at once

Sgd::Sgd(const model::ParamTable& table, SgdConfig config, std::vector<Part> parts, Backend& backend)
    : config_(config), be_(backend) {
  check(config.momentum >= 0 && config.momentum < 1, "SGD: momentum must be in [0, 1), got {}", config.momentum);
  size_t covered = 0;
  for (const Part& p : parts) {
    check(covered <= p.begin && p.begin <= p.end && p.end <= table.total(),
          "SGD: part [{}, {}) overlaps the previous one or is not inside the {} floats", p.begin, p.end, table.total());
    check(p.offset == size_, "SGD: part [{}, {}) is not stored right after the previous one", p.begin, p.end);
    covered = p.end;
    size_ += p.end - p.begin;
    for (const model::ParamEntry& e : table.entries()) {
      const size_t lo = std::max(e.offset, p.begin), hi = std::min(e.offset + e.numel, p.end);
      if (lo < hi) runs_.push_back({lo, hi, p.offset + (lo - p.begin)});
    }
  }
  if (config.momentum > 0) buffer_ = DeviceArray<float>(be_, size_);
  scratch_ = DeviceArray<float>(be_, std::min(size_, kPiece));
}

void Sgd::step(float* params, const float* grads, double lr, bool whole_params, float grad_scale) {
  step_count_++;
  const float minus_lr = float(-lr);
  const bool scaled = grad_scale != 1.0f;  // multiplying by 1 would change nothing
  for (const Run& r : runs_) {
    float* const weights = params + (whole_params ? r.begin : r.offset);
    const float* direction = grads + r.offset;
    const size_t n = r.end - r.begin;
    if (config_.momentum > 0) {
      float* const buffer = buffer_.data() + r.offset;
      be_.scale(buffer, n, float(config_.momentum));
      for (size_t at = 0; scaled && at < n; at += kPiece) {  // buf += g · grad_scale, a piece at a time
        const size_t m = std::min(kPiece, n - at);
        be_.copy(scratch_.data(), direction + at, m);
        be_.scale(scratch_.data(), m, grad_scale);
        be_.add(buffer + at, buffer + at, scratch_.data(), int64_t(m));
      }
      if (!scaled) be_.add(buffer, buffer, direction, int64_t(n));
      direction = buffer;
    }
    const bool scale_direction = scaled && config_.momentum == 0;  // with momentum the buffer holds it scaled
    for (size_t at = 0; at < n; at += kPiece) {
      const size_t m = std::min(kPiece, n - at);
      be_.copy(scratch_.data(), direction + at, m);
      if (scale_direction) be_.scale(scratch_.data(), m, grad_scale);
      be_.scale(scratch_.data(), m, minus_lr);
      be_.add(weights + at, weights + at, scratch_.data(), int64_t(m));
    }
  }
}

std::vector<std::string> Sgd::state_names() const {
  if (config_.momentum > 0) return {"momentum_buffer"};
  return {};
}

void Sgd::state_to_host(size_t i, float* host) const {
  check(i < state_names().size(), "SGD has {} state tensors, not {}", state_names().size(), i + 1);
  be_.to_host(host, buffer_.data(), size_ * sizeof(float));
}

void Sgd::state_from_host(size_t i, const float* host) {
  check(i < state_names().size(), "SGD has {} state tensors, not {}", state_names().size(), i + 1);
  be_.to_device(buffer_.data(), host, size_ * sizeof(float));
}

}  // namespace replica::optim
