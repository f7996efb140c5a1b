// document_offsets: the rows' document lengths → cumulative offsets, with the checks the kernels rely on.
#include "replica/model/document_offsets.h"

#include <limits>

#include "replica/core/error.h"

namespace replica::model {

std::vector<int32_t> document_offsets(std::span<const std::vector<int32_t>> doc_lens, int64_t T, int64_t first_row) {
  if (doc_lens.empty()) return {};
  check(int64_t(doc_lens.size()) * T <= std::numeric_limits<int32_t>::max(),
        "packed batch: {} rows of {} tokens overflow the int32 document offsets", doc_lens.size(), T);
  std::vector<int32_t> offsets{0};
  for (size_t row = 0; row < doc_lens.size(); row++) {
    int64_t sum = 0;
    for (int32_t length : doc_lens[row]) {
      check(length > 0, "packed batch row {}: document length {}, expected every length > 0", first_row + int64_t(row),
            length);
      sum += length;
      if (sum <= T) offsets.push_back(int32_t(int64_t(row) * T + sum));
    }
    check(sum == T, "packed batch row {}: document lengths sum to {}, expected the sequence length {}",
          first_row + int64_t(row), sum, T);
  }
  return offsets;
}

std::vector<int32_t> leading_document_offsets(std::span<const int32_t> offsets, int64_t end) {
  if (offsets.empty()) return {};
  check(end > 0 && end <= offsets.back(), "document offsets: a prefix of {} tokens of a row of {}", end,
        offsets.back());
  std::vector<int32_t> leading;
  for (int32_t offset : offsets)
    if (offset < end) leading.push_back(offset);
  leading.push_back(int32_t(end));
  return leading;
}

void check_document_offsets(std::span<const int32_t> offsets, int64_t B, int64_t T) {
  if (offsets.empty()) return;
  check(offsets.front() == 0 && offsets.back() == B * T,
        "document offsets run from {} to {}, expected 0 to {} (B = {} rows of T = {})", offsets.front(), offsets.back(),
        B * T, B, T);
  int64_t next_row_start = T;
  for (size_t n = 1; n < offsets.size(); n++) {
    check(offsets[n] > offsets[n - 1], "document offsets must increase: offset {} is {} after {}", n, offsets[n],
          offsets[n - 1]);
    check(offsets[n] <= next_row_start, "document offsets: the document ending at {} crosses the row start {}",
          offsets[n], next_row_start);
    if (offsets[n] == next_row_start) next_row_start += T;
  }
}

}  // namespace replica::model
