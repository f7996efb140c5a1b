// What the two CPU attention kernels (attention.cc: fp32, attention_bf16.cc: bf16 products) share: the tile size.
// Both visit the same tiles in the same order (from the first key RowMask, kernels/attention_mask.h, gives a tile's
// first query), so a query slice starting on a tile boundary gives the bits of the whole row in either.
#pragma once
#include <cstdint>

namespace replica::cpu::attention_tiles {

constexpr int64_t BQ = 64;  // queries per tile
constexpr int64_t BK = 64;  // keys per tile

}  // namespace replica::cpu::attention_tiles
