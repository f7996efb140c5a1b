// The wgmma attention's tile-fill order (kernels/cuda/core_tile_fill.cuh) as shared memory serves it: every piece of
// a core tile copied exactly once, each 8-thread phase of a warp's 16-byte stores on 32 distinct banks (no
// conflict), and each warp reading whole 32-byte sectors of global memory. The emulator has no banks, so this is
// the address arithmetic itself, for every head dim the kernels take.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "replica/kernels/cuda/core_tile_fill.cuh"

namespace {

using replica::cuda::core_piece;
using replica::cuda::core_piece_offset;
using replica::cuda::CorePiece;

constexpr int kTokens = 64, kWarp = 32, kPhase = 8, kBanks = 32;

template <int D>
void expect_conflict_free_fill() {
  constexpr int kPieces = kTokens * D / 8;
  std::vector<int> copies(kPieces, 0);
  for (int warp_start = 0; warp_start < kPieces; warp_start += kWarp) {
    std::set<int> sectors;
    for (int phase = 0; phase < kWarp / kPhase; phase++) {
      std::set<int> banks;
      for (int lane = phase * kPhase; lane < (phase + 1) * kPhase; lane++) {
        const CorePiece p = core_piece<D>(warp_start + lane);
        ASSERT_TRUE(p.token >= 0 && p.token < kTokens && p.piece >= 0 && p.piece < D / 8) << "D=" << D;
        const int byte = 2 * core_piece_offset<D>(p);
        copies[byte / 16]++;
        for (int b = byte; b < byte + 16; b += 4) banks.insert(b / 4 % kBanks);
        // Global memory: the token's row of D bf16 values, rows D·2 bytes apart (one head of x [T, heads, D]).
        const int global = p.token * D * 2 + p.piece * 16;
        sectors.insert(global / 32);
      }
      EXPECT_EQ(banks.size(), size_t(kBanks)) << "D=" << D << ": a bank conflict in the phase of lanes "
                                              << phase * kPhase << "-" << (phase + 1) * kPhase - 1 << " of piece "
                                              << warp_start;
    }
    EXPECT_EQ(sectors.size(), size_t(kWarp * 16 / 32)) << "D=" << D << ": the warp from piece " << warp_start
                                                       << " reads partial sectors";
  }
  for (int i = 0; i < kPieces; i++) EXPECT_EQ(copies[i], 1) << "D=" << D << ": piece at byte " << 16 * i;
}

TEST(CoreTileFill, EveryPieceOnceWithoutBankConflictsInWholeSectors) {
  expect_conflict_free_fill<64>();
  expect_conflict_free_fill<128>();
  expect_conflict_free_fill<256>();
}

// The row-major order this replaced (thread e → token e / (D/8), piece e % (D/8)) puts a phase on 4 banks: the
// arithmetic above is what tells the two apart.
TEST(CoreTileFill, TheRowMajorOrderConflictsEightWays) {
  constexpr int D = 128;
  std::set<int> banks;
  for (int e = 0; e < kPhase; e++) {
    const int byte = 2 * core_piece_offset<D>({e / (D / 8), e % (D / 8)});
    for (int b = byte; b < byte + 16; b += 4) banks.insert(b / 4 % kBanks);
  }
  EXPECT_EQ(banks.size(), size_t(4));
}

}  // namespace
