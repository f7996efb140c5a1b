// Warp-level tensor-core products through PTX mma.sync, with fragments whose layout PTX documents (unlike
// wmma's): kernels can keep a product in registers and feed it to the next one, as flash attention does with
// its probabilities; ldmatrix to load fragments and cp.async to stage tiles. Under tests/cuda_emu the same
// calls run on the emulator's model of each instruction.
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

// Four 8 × 8 bf16 matrices from shared memory into one register each, in the fragment layout above:
// lane l gives the address of row l % 8 of matrix l / 8 (16 contiguous, 16-byte aligned bytes), and r[i]
// receives matrix i's elements [g][2t, 2t+1] or, with kTranspose, [2t][g] and [2t+1][g]. One instruction
// where 32-bit shared loads would take four.
template <bool kTranspose>
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const __nv_bfloat16* row) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::ldmatrix_x4(r, row, kTranspose);
#else
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if constexpr (kTranspose)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
#endif
}

// Asynchronous 16-byte copies from global to shared memory (cp.async, Ampere and later): a thread issues them,
// closes a group with cp_async_commit(), and cp_async_wait<n>() returns once at most n of its groups are still
// in flight; a __syncthreads() after the wait makes every thread's copies visible to the block. Tiles can so be
// fetched while the previous one is being multiplied.
__device__ inline void cp_async_16(void* shared_dst, const void* global_src) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::async_copy(shared_dst, global_src, 16);
#else
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global_src) : "memory");
#endif
}
__device__ inline void cp_async_commit() {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::async_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ inline void cp_async_wait() {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::async_wait(kPending);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Two floats rounded to bf16 (RNE) in one register, `lo` in the low half.
__device__ inline uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  uint32_t word;
  std::memcpy(&word, &pair, sizeof word);
  return word;
}

}  // namespace replica::cuda
