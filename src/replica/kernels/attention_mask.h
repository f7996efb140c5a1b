// Which keys a query sees, for every attention kernel, CPU and CUDA alike (host and device code): keys j ≤ i, the
// last W of them on a sliding layer, and with packed documents only those of i's own document (the rule of
// kernels/cpu/attention.h). Stated once, with the monotonicity that the kernels' tile skipping relies on.
#pragma once
#include <cstdint>

#include "replica/kernels/attention.h"
#include "replica/kernels/host_device.h"

namespace replica::attention_mask {

// The mask of one batch row: its length, its window and where its documents start and end. A kernel looks up its
// own rows (a binary search in the offsets); without documents the row is one document.
struct RowMask {
  int64_t T, window;
  DocumentOffsets docs;
  int64_t row_begin;  // b·T: the row's first token in the offsets' numbering

  REPLICA_HOST_DEVICE RowMask(int64_t T_, int64_t window_, const DocumentOffsets& docs_, int64_t b)
      : T(T_), window(window_), docs(docs_), row_begin(b * T_) {}

  // The index of the document holding position t of the row (t clamped into the row): the last offset ≤ it.
  REPLICA_HOST_DEVICE int64_t document(int64_t t) const {
    const int64_t n = row_begin + (t < 0 ? 0 : t > T - 1 ? T - 1 : t);
    int64_t lo = 0, hi = docs.count;  // offsets[lo] ≤ n < offsets[hi]
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (docs.offsets[mid] <= n) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  REPLICA_HOST_DEVICE int64_t document_start(int64_t t) const {
    return docs.count > 0 ? docs.offsets[document(t)] - row_begin : 0;
  }
  REPLICA_HOST_DEVICE int64_t document_end(int64_t t) const {
    return docs.count > 0 ? docs.offsets[document(t) + 1] - row_begin : T;
  }
  // The first key query i sees. Non-decreasing in i, so a query tile's first row bounds the keys it visits.
  REPLICA_HOST_DEVICE int64_t first_key(int64_t i) const {
    const int64_t start = document_start(i), window_start = window > 0 ? i - window + 1 : 0;
    return start > window_start ? start : window_start;
  }
  // One past the last query that sees key j. Non-decreasing in j, so a key tile's last key bounds its queries.
  REPLICA_HOST_DEVICE int64_t query_end(int64_t j) const {
    const int64_t end = document_end(j), window_end = window > 0 ? j + window : T;
    return end < window_end ? end : window_end;
  }
};

// The mask of a decoding step's queries (kernels/attention.h, CachedAttentionShape): one sequence, no documents, its
// keys the cache's positions and the new ones up to `end`.
REPLICA_HOST_DEVICE inline RowMask sequence_mask(int64_t end, int64_t window) { return RowMask(end, window, {}, 0); }

// Whether query i sees key j, given the first key i sees (RowMask::first_key) ...
REPLICA_HOST_DEVICE inline bool visible_from(int64_t i, int64_t j, int64_t first) { return j <= i && j >= first; }
// ... or the end of the queries that see j (RowMask::query_end): the same rule from the key's side.
REPLICA_HOST_DEVICE inline bool visible_until(int64_t i, int64_t j, int64_t query_end) {
  return i >= j && i < query_end;
}

}  // namespace replica::attention_mask
