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
//
// wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 with A in registers (PTX ISA, "Asynchronous Warpgroup Level
// Matrix Multiply-Accumulate"): warp w of the warpgroup holds rows 16w … 16w + 15 of A in the m16n8k16 A layout
// and the same rows of D as eight m16n8 accumulator tiles; B comes from shared memory through a matrix descriptor
// (start address, leading byte offset between core matrices along K, stride byte offset along N, each >> 4;
// no swizzling), K-major or, transposed, MN-major. Each warp computes its rows when it issues the product. With A
// from shared memory too, A's descriptor is read as B's (A's rows are B's columns), K-major or MN-major.
#include <bit>
#include <cstdint>
#include <cstring>

#include "cuda_emu.h"

namespace cuda_emu {

namespace {

struct MmaOperands {
  uint32_t a[4], b[2];
};

float bf16_half(uint32_t word, int half) { return std::bit_cast<float>(half ? word & 0xffff0000u : word << 16); }

// Element [row][k] of the 16 × 16 A and [k][col] of the 16 × 8 B, from the lanes' registers as the layout above
// places them.
float a_element(const MmaOperands* lanes, int row, int k) {
  return bf16_half(lanes[4 * (row % 8) + k % 8 / 2].a[row / 8 + 2 * (k / 8)], k % 2);
}
float b_element(const MmaOperands* lanes, int k, int col) {
  return bf16_half(lanes[4 * col + k % 8 / 2].b[k / 8], k % 2);
}

// This lane's rows of A, g and g + 8 (g = lane / 4): the rows of D its accumulators hold.
void lane_rows_of_a(const MmaOperands* lanes, float (&rows)[2][16]) {
  const int g = lane() / 4;
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 16; k++) rows[i][k] = a_element(lanes, g + 8 * i, k);
}

}  // namespace

// Each lane decodes from the gathered registers only the two rows of A and two columns of B its four elements of D
// need (decoding all of A and B in every lane was most of the emulation's time). C's fragment has D's layout, so
// the input to a lane's element r of D is its own d[r].
void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const MmaOperands mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
  const auto* lanes = static_cast<const MmaOperands*>(gather(&mine, sizeof mine));
  const int t = lane() % 4;
  float rows[2][16], cols[2][16];  // A[g + 8i][k], B[k][2t + i]
  lane_rows_of_a(lanes, rows);
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 16; k++) cols[i][k] = b_element(lanes, k, 2 * t + i);
  for (int r = 0; r < 4; r++) {
    float acc = d[r];  // C[g + 8(r / 2)][2t + r % 2]; fp32 accumulation of exact bf16 products
    for (int k = 0; k < 16; k++) acc += rows[r / 2][k] * cols[r % 2][k];
    d[r] = acc;
  }
}

// ldmatrix (cuda_emu.h): the warp's row addresses gathered, then each lane reads its pairs from the rows.
void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transpose) {
  check_shared(row, 16, "ldmatrix");
  const auto* rows = static_cast<const void* const*>(gather(&row, sizeof row));
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

// A wgmma operand's shared-memory descriptor (no swizzling), decoded once per instruction: element [k][mn] lies in
// core matrices of 8 rows × 16 bytes, `mn` along the rows and k contiguous (K-major) or k along the rows (MN-major,
// `transpose`).
class Descriptor {
 public:
  Descriptor(uint64_t descriptor, bool transpose)
      : start_(uint32_t(descriptor & 0x3FFF) << 4),
        k_stride_(uint32_t(descriptor >> 16 & 0x3FFF) << 4),
        mn_stride_(uint32_t(descriptor >> 32 & 0x3FFF) << 4),
        transpose_(transpose),
        shared_(dynamic_shared_memory()) {
    if (descriptor >> 62 != 0 || (descriptor >> 49 & 7) != 0)
      fail("wgmma: the emulator models descriptors without swizzling only");
  }
  // One check per instruction in place of one per element: fails (shared_offset) if an element [k][mn] that the
  // lane reads, k < 16, lies past the end of shared memory, given `last_mn`, the lane's largest mn / 8 and largest
  // mn % 8 in one. An element's address, start + (k / 8)·k_stride + (mn / 8)·mn_stride + its place inside a core
  // matrix, is a sum of non-negative terms, each growing with k / 8, mn / 8, k % 8 or mn % 8: element [15][last_mn]
  // ends at the highest byte the lane reads, and no element lies below shared memory's start.
  void check_reads(int last_mn) const { shared_offset(address(15, last_mn) + 1); }
  // Element [k][mn]; check_reads first.
  float element(int k, int mn) const {
    uint16_t bits;
    std::memcpy(&bits, address(k, mn), sizeof bits);
    return bf16_half(bits, 0);
  }

 private:
  const unsigned char* address(int k, int mn) const {
    const uint32_t inside = transpose_ ? (k % 8) * 16 + (mn % 8) * 2 : (mn % 8) * 16 + (k % 8) * 2;
    return shared_ + start_ + (k / 8) * k_stride_ + (mn / 8) * mn_stride_ + inside;
  }

  uint32_t start_, k_stride_, mn_stride_;
  bool transpose_;
  const unsigned char* shared_;
};

// The lane's share of the warp's 16 rows of D = A·B (+ D), given its rows g and g + 8 of A: its 32 accumulators
// (rows g and g + 8, columns 8j + 2t and 8j + 2t + 1 of the eight m16n8 tiles), each column of B decoded once.
// D's input is the latest result in flight for d (chained products), else d; the result lands at the wait
// (emulator.cc).
void wgmma_rows(float (&d)[32], const float (&a)[2][16], uint64_t b, bool transpose_b, bool accumulate) {
  const float* in_flight = wgmma_in_flight(d);
  const float* input = in_flight ? in_flight : d;
  const Descriptor b_operand(b, transpose_b);
  const int t = lane() % 4;
  float cols[16][16];  // B[k][8j + 2t + i] at cols[2j + i][k]
  b_operand.check_reads(8 * 7 + 2 * t + 1);  // column 8j + 2t + i with j = 7, i = 1
  for (int c = 0; c < 16; c++)
    for (int k = 0; k < 16; k++) cols[c][k] = b_operand.element(k, 8 * (c / 2) + 2 * t + c % 2);
  float result[32];
  for (int j = 0; j < 8; j++)
    for (int e = 0; e < 4; e++) {
      float acc = accumulate ? input[4 * j + e] : 0.0f;
      for (int k = 0; k < 16; k++) acc += a[e / 2][k] * cols[2 * j + e % 2][k];
      result[4 * j + e] = acc;
    }
  wgmma_issue(d, result);
}

// wgmma (cuda_emu.h): the warp's A fragments gathered as for mma.sync, B decoded from the descriptor.
void wgmma_m64n64k16_bf16(float (&d)[32], const uint32_t (&a)[4], uint64_t b, bool transpose_b, bool accumulate) {
  const MmaOperands mine{{a[0], a[1], a[2], a[3]}, {}};
  const auto* lanes = static_cast<const MmaOperands*>(gather(&mine, sizeof mine));
  float rows[2][16];
  lane_rows_of_a(lanes, rows);
  wgmma_rows(d, rows, b, transpose_b, accumulate);
}

// A read through its descriptor as B is (A's M is B's N): K-major, or MN-major with transpose_a.
void wgmma_m64n64k16_bf16_ss(float (&d)[32], uint64_t a, uint64_t b, bool transpose_a, bool transpose_b,
                             bool accumulate) {
  warp_collective("wgmma.mma_async");
  const Descriptor a_operand(a, transpose_a);
  const int first_row = int(thread_index().x / 32 % 4) * 16 + lane() / 4;  // row g of the warp's 16 in the 64
  float rows[2][16];
  a_operand.check_reads(first_row + 8);  // row g + 8
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 16; k++) rows[i][k] = a_operand.element(k, first_row + 8 * i);
  wgmma_rows(d, rows, b, transpose_b, accumulate);
}

}  // namespace cuda_emu
