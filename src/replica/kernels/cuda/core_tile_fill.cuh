// Which 16-byte piece of a wgmma core tile each thread copies (attention_wgmma.cu's copy_core_rows_async). A core
// tile holds 64 tokens × D head dims as core matrices of 8 tokens × 8 dims (128 contiguous bytes, a token's 8
// values per 16-byte row), the D / 8 core matrices of 8 tokens one after the other, then the next 8 tokens.
// Consecutive pieces of one token are therefore 128 bytes apart in shared memory: handing them to consecutive
// threads (the plain row-major order) puts every 8-thread phase of a 16-byte store on the same 4 banks, an 8-way
// conflict. Here the 8 threads of a phase take one piece of 8 consecutive tokens instead (one whole core matrix:
// conflict-free), and the 4 phases of a warp 4 consecutive pieces of those tokens (64 contiguous bytes of each
// token's row in global memory: 16 full 32-byte sectors per warp, as the row-major order reads). The tile's layout,
// and so every result, is the same as with the row-major order.
#pragma once
#include <cuda_runtime.h>

namespace replica::cuda {

struct CorePiece {
  int token, piece;  // token of the tile, piece of 8 head dims
};

// Piece e of the fill (e = thread + 128·step, over 64 · D / 8 pieces).
template <int D>
__host__ __device__ constexpr CorePiece core_piece(int e) {
  constexpr int kPieceGroups = D / 32;  // groups of 4 pieces per token
  static_assert(D % 32 == 0, "a warp copies 4 pieces of 8 tokens");
  const int token8 = e % 8, piece4 = (e / 8) % 4, group = e / 32;
  return {(group / kPieceGroups) * 8 + token8, (group % kPieceGroups) * 4 + piece4};
}

// Where a piece lies in the tile, in bf16 elements.
template <int D>
__host__ __device__ constexpr int core_piece_offset(CorePiece p) {
  return ((p.token / 8) * (D / 8) + p.piece) * 64 + (p.token % 8) * 8;
}

}  // namespace replica::cuda
