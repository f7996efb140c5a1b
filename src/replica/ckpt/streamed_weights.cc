// StreamedWeights: one group of weights in memory at a time, read from the model's files on acquire.
#include "replica/ckpt/streamed_weights.h"

#include <algorithm>
#include <vector>

#include "replica/core/error.h"

namespace replica::ckpt {

StreamedWeights::StreamedWeights(const std::string& dir, const model::ParamTable& table, Backend& backend)
    : tensors_(dir, table), be_(backend) {}

model::GroupWeights StreamedWeights::acquire(model::ParamTable::Range range, Precision precision) {
  Held& h = held_[range.begin];
  const size_t n = range.end - range.begin;
  if (h.users == 0) {
    h.f32 = DeviceArray<float>(be_, n);
    if (be_.host_memory()) {
      tensors_.read_range(range, h.f32.data());
    } else {
      std::vector<float> staged(n);
      tensors_.read_range(range, staged.data());
      be_.to_device(h.f32.data(), staged.data(), n * sizeof(float));
    }
    held_bytes_ += n * sizeof(float);
    reads_++;
  }
  if (precision == Precision::bf16 && h.b16.empty()) {
    h.b16 = DeviceArray<bf16>(be_, n);
    be_.convert_to_bf16(h.f32.data(), h.b16.data(), n);
    held_bytes_ += n * sizeof(bf16);
  }
  peak_bytes_ = std::max(peak_bytes_, held_bytes_);
  h.users++;
  return {h.f32.data(), h.b16.empty() ? nullptr : h.b16.data(), range.begin};
}

void StreamedWeights::release(model::ParamTable::Range range) {
  const auto it = held_.find(range.begin);
  check(it != held_.end() && it->second.users > 0, "StreamedWeights: group at {} released but not acquired",
        range.begin);
  if (--it->second.users > 0) return;
  held_bytes_ -= it->second.f32.size() * sizeof(float) + it->second.b16.size() * sizeof(bf16);
  held_.erase(it);
}

size_t StreamedWeights::planned_bytes(const model::ParamTable& table, Precision precision) {
  const auto floats = [](model::ParamTable::Range r) { return r.end - r.begin; };
  size_t most = table.largest_group();
  if (table.tied()) most = std::max(most, floats(table.head_range()) + floats(table.embed_range()));
  return most * (precision == Precision::bf16 ? sizeof(float) + sizeof(bf16) : sizeof(float));
}

}  // namespace replica::ckpt
