// OBFD: the segment tree query/update and the FIFO bins of OLMo-core's InstancePacker.
#include "replica/data/obfd.h"

#include <bit>

#include "replica/core/error.h"
#include "replica/data/numpy_argsort.h"

namespace replica::data {

InstancePacker::InstancePacker(uint64_t capacity)
    : capacity_(capacity), tree_(2 * capacity, 0), head_(capacity + 1, -1), tail_(capacity + 1, -1) {
  check(std::has_single_bit(capacity) && capacity <= (uint64_t(1) << 31),
        "packing capacity {} must be a power of two (at most 2^31)", capacity);
  set_leaf(capacity, capacity);
}

void InstancePacker::set_leaf(uint64_t space, uint64_t weight) {
  uint64_t node = capacity_ + space - 1;
  tree_[node] = uint32_t(weight);
  for (node /= 2; node >= 1; node /= 2) tree_[node] = std::max(tree_[2 * node], tree_[2 * node + 1]);
}

uint64_t InstancePacker::add(uint64_t length) {
  check(length >= 1 && length <= capacity_, "document of {} tokens does not fit instances of {}", length, capacity_);
  // The leftmost leaf whose weight is at least `length`: the smallest space that fits it.
  uint64_t node = 1;
  while (node < capacity_) node = length <= tree_[2 * node] ? 2 * node : 2 * node + 1;
  const uint64_t space = node - capacity_ + 1;

  uint64_t bin;
  if (space == capacity_) {
    bin = bin_count_++;
    next_.push_back(-1);
  } else {  // the oldest bin with exactly this space
    bin = uint64_t(head_[space]);
    head_[space] = next_[bin];
    if (head_[space] < 0) tail_[space] = -1, set_leaf(space, 0);
  }
  const uint64_t left = space - length;
  if (left > 0) {
    if (head_[left] < 0) {
      set_leaf(left, left);
      head_[left] = int64_t(bin);
    } else {
      next_[uint64_t(tail_[left])] = int64_t(bin);
    }
    tail_[left] = int64_t(bin);
    next_[bin] = -1;
  }
  return bin;
}

PackedInstances pack_documents(std::span<const DocumentSpan> documents, uint64_t capacity) {
  std::vector<int64_t> keys(documents.size());
  for (size_t i = 0; i < documents.size(); i++) keys[i] = -int64_t(documents[i].length());
  const std::vector<int64_t> order = numpy_argsort(keys);

  PackedInstances out;
  out.documents.reserve(documents.size());
  for (int64_t i : order) out.documents.push_back(documents[size_t(i)]);
  InstancePacker packer(capacity);
  std::vector<std::vector<uint64_t>> bins;
  for (uint64_t id = 0; id < out.documents.size(); id++) {
    const uint64_t bin = packer.add(out.documents[id].length());
    if (bin == bins.size()) bins.emplace_back();
    bins[bin].push_back(id);
  }
  out.instance_offsets.reserve(bins.size() + 1);
  out.instance_offsets.push_back(0);
  out.documents_by_instance.reserve(out.documents.size());
  for (const auto& bin : bins) {
    out.documents_by_instance.insert(out.documents_by_instance.end(), bin.begin(), bin.end());
    out.instance_offsets.push_back(out.documents_by_instance.size());
  }
  return out;
}

}  // namespace replica::data
