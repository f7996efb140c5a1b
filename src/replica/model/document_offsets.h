// Packed rows' documents as attention takes them: the rows' document lengths (data::Batch::doc_lens) turned into
// the cumulative offsets of kernels/attention.h (flash-attn's cu_seqlens), checked on the host.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace replica::model {

// offsets[0] = 0, then the end of each document over the rows in order, so offsets.back() = rows · T. Each row's
// lengths must be positive and sum to T (replica::Error naming the row, counted from `first_row`, and what they sum
// to). Empty when `doc_lens` is (an unpacked batch: each row one document).
std::vector<int32_t> document_offsets(std::span<const std::vector<int32_t>> doc_lens, int64_t T, int64_t first_row);

// The documents of the first `end` tokens of one row (offsets: what document_offsets makes for it, or empty): the
// offsets below `end`, then `end`, the last document cut there. A context-parallel rank whose slice ends at `end`
// attends over those keys (ring-flash-attn's cu_seqlens_k for the llama3 scheme, stage3.md §4.2, without moving the
// keys' start to the slice's first document: the kernels skip the key tiles no query sees). Empty when offsets is.
std::vector<int32_t> leading_document_offsets(std::span<const int32_t> offsets, int64_t end);

// Raises replica::Error unless `offsets` is empty or what document_offsets makes for B rows of T: 0 first, B · T
// last, strictly increasing, every row start among them (what the attention kernels rely on).
void check_document_offsets(std::span<const int32_t> offsets, int64_t B, int64_t T);

}  // namespace replica::model
