// What the two CPU attention kernels (attention.cc: fp32, attention_bf16.cc: bf16 products) share: the tile size
// and the first key each query sees. Both visit the same tiles in the same order, so a query slice starting on a
// tile boundary gives the bits of the whole row in either.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "replica/kernels/types.h"

namespace replica::cpu::attention_tiles {

constexpr int64_t BQ = 64;  // queries per tile
constexpr int64_t BK = 64;  // keys per tile

// The first key each query of the batch sees, [B·T] indexed by key position (only the last rows_q() of each row are
// queries): the window's first, and with documents none before the start of the query's own document.
// Non-decreasing along a row, so a query tile's first row bounds the keys it visits.
inline std::vector<int64_t> first_keys(const AttentionShape& s, const DocumentOffsets& docs) {
  std::vector<int64_t> first(size_t(s.B * s.T));
  int64_t doc = 0;  // the document holding token n
  for (int64_t n = 0; n < s.B * s.T; n++) {
    while (doc < docs.count && docs.offsets[doc + 1] <= n) doc++;
    const int64_t i = n % s.T, start = docs.count > 0 ? docs.offsets[doc] - (n - i) : 0;
    first[size_t(n)] = std::max(start, s.window > 0 ? i - s.window + 1 : int64_t(0));
  }
  return first;
}

}  // namespace replica::cpu::attention_tiles
