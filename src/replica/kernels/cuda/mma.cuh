// Warp-level tensor-core products through PTX mma.sync, with fragments whose layout PTX documents (unlike
// wmma's): kernels can keep a product in registers and feed it to the next one, as flash attention does with
// its probabilities. Under tests/cuda_emu the same call runs on the emulator's model of the instruction.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>

namespace replica::cuda {

// d += a·b for one m16n8k16 tile: A 16 × 16 bf16 (row-major), B 16 × 8 bf16 (column-major), D 16 × 8 fp32.
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with g = lane / 4 and t = lane % 4, two bf16 per
// 32-bit register, the lower index in the low half:
//   a[0] = A[g][2t, 2t+1]   a[1] = A[g+8][2t, 2t+1]   a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   b[0] = B[2t, 2t+1][g]   b[1] = B[2t+8, 2t+9][g]
//   d[0] = D[g][2t]   d[1] = D[g][2t+1]   d[2] = D[g+8][2t]   d[3] = D[g+8][2t+1]
__device__ inline void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::mma_m16n8k16_bf16(d, a, b);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Two floats rounded to bf16 (RNE) in one register, `lo` in the low half.
__device__ inline uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  uint32_t word;
  std::memcpy(&word, &pair, sizeof word);
  return word;
}

// The 32-bit register holding the bf16 pair at p (4-byte aligned).
__device__ inline uint32_t load_pair(const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); }

}  // namespace replica::cuda
