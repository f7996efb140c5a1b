// Optimized Best-Fit-Decreasing bin packing (arXiv 2404.10830, Appendix B) as OLMo-core's InstancePacker
// (data/utils.py): documents, longest first, each go to the bin with the least remaining space that still fits
// it (the oldest such bin), or to a new bin. A segment tree over the capacities 1..L finds that space in
// O(log L); the bins of each remaining space form a FIFO queue.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace replica::data {

class InstancePacker {
 public:
  explicit InstancePacker(uint64_t capacity);  // L: a power of two

  // Puts a document of `length` tokens (1 <= length <= L) in a bin and returns the bin's id (bins are numbered
  // in creation order), as InstancePacker._pack_document.
  uint64_t add(uint64_t length);
  uint64_t num_bins() const { return bin_count_; }

 private:
  void set_leaf(uint64_t space, uint64_t weight);  // leaf space - 1 of the tree, and the maxima above it

  uint64_t capacity_;
  // Heap layout: node 1 is the root, node i has children 2i and 2i + 1, leaf k (space k + 1) is node L + k. A
  // node's weight is the largest space below it that some bin has (the space L: a new bin, always there).
  std::vector<uint32_t> tree_;
  // The FIFO queue of bins with each remaining space, as a linked list: head/tail per space, next per bin.
  std::vector<int64_t> head_, tail_, next_;
  uint64_t bin_count_ = 0;
};

// A document as OLMo-core's pack_documents sees it: [start, end) in the tokens of its source group.
struct DocumentSpan {
  uint64_t start = 0, end = 0;
  uint64_t length() const { return end - start; }
};

struct PackedInstances {
  std::vector<DocumentSpan> documents;          // sorted by length, decreasing (numpy's tie order); id = position
  std::vector<uint64_t> instance_offsets;       // [instances + 1]: instance i holds documents_by_instance[o_i, o_i+1)
  std::vector<uint64_t> documents_by_instance;  // document ids, bin by bin, each bin in the order it was filled
};

// InstancePacker.pack_documents: sort by -length with np.argsort (numpy_argsort.h), then pack in that order.
PackedInstances pack_documents(std::span<const DocumentSpan> documents, uint64_t capacity);

}  // namespace replica::data
