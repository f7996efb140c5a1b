// PTX instructions that kernels issue through inline assembly, emulated from the PTX ISA's definitions.
//
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix Fragments for mma.m16n8k16 with
// floating point type"). With g = lane / 4 and t = lane % 4, and every 32-bit register holding two bf16 values,
// the lower-indexed one in the low half:
//   A, 16 × 16, row-major:  a0 = A[g][2t, 2t+1]   a1 = A[g+8][2t, 2t+1]   a2 = A[g][2t+8, 2t+9]   a3 = A[g+8][2t+8, 2t+9]
//   B, 16 × 8, column-major: b0 = B[2t, 2t+1][g]   b1 = B[2t+8, 2t+9][g]
//   C and D, 16 × 8, fp32:   c0 = C[g][2t]   c1 = C[g][2t+1]   c2 = C[g+8][2t]   c3 = C[g+8][2t+1]
// The emulator gathers the warp's registers, rebuilds A, B and C from these definitions, and gives each lane its
// four elements of D: a kernel that puts a value in the wrong register computes a wrong product here, as on a GPU.
//
// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 (PTX ISA, "Warp-level matrix load instruction: ldmatrix"):
// lanes 8i … 8i + 7 give the row addresses of matrix i, and each lane receives, per matrix, the pair of elements
// the mma fragments above place in one register.
#include <bit>
#include <cstdint>
#include <cstring>

#include "cuda_emu.h"

namespace cuda_emu {

namespace {

struct MmaOperands {
  uint32_t a[4], b[2];
  float c[4];
};

float bf16_half(uint32_t word, int half) { return std::bit_cast<float>(half ? word & 0xffff0000u : word << 16); }

}  // namespace

void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  MmaOperands mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}, {d[0], d[1], d[2], d[3]}};
  MmaOperands lanes[32];
  gather(&mine, sizeof mine, lanes);
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; l++) {
    const int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; r++)
      for (int half = 0; half < 2; half++)
        A[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + half] = bf16_half(lanes[l].a[r], half);
    for (int r = 0; r < 2; r++)
      for (int half = 0; half < 2; half++) B[2 * t + 8 * r + half][g] = bf16_half(lanes[l].b[r], half);
    for (int r = 0; r < 4; r++) C[g + 8 * (r / 2)][2 * t + r % 2] = lanes[l].c[r];
  }
  const int g = lane() / 4, t = lane() % 4;
  for (int r = 0; r < 4; r++) {
    const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
    float acc = C[row][col];  // fp32 accumulation of exact bf16 products
    for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
    d[r] = acc;
  }
}

// ldmatrix (cuda_emu.h): the warp's row addresses gathered, then each lane reads its pairs from the rows.
void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transpose) {
  check_shared(row, 16, "ldmatrix");
  const void* rows[32];
  gather(&row, sizeof row, rows);
  const int g = lane() / 4, t = lane() % 4;
  auto element = [&](int matrix, int i, int j) {  // element [i][j] of a matrix, as bits
    uint16_t bits;
    std::memcpy(&bits, static_cast<const unsigned char*>(rows[8 * matrix + i]) + 2 * j, sizeof bits);
    return uint32_t(bits);
  };
  for (int m = 0; m < 4; m++)
    r[m] = transpose ? element(m, 2 * t, g) | element(m, 2 * t + 1, g) << 16
                     : element(m, g, 2 * t) | element(m, g, 2 * t + 1) << 16;
}

}  // namespace cuda_emu
