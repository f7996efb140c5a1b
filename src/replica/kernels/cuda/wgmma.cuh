// Hopper warpgroup products (sm_90a wgmma.mma_async): the four warps of a warpgroup (128 threads) multiply a
// 64 × 16 A held in their registers (warp w: rows 16w … 16w + 15, in mma.sync's A fragment layout, mma.cuh) by
// a 16 × 64 B that the tensor cores read straight from shared memory through a descriptor, so no thread loads
// B's fragments (what bounds the mma.sync kernels). Under tests/cuda_emu the same calls run on the emulator's
// model of each instruction.
//
// Accumulators: d[32] per thread, the 64 × 64 fp32 result in mma.sync's accumulator layout per 8-column tile:
// d[4j + e] is row 16w + g + 8·(e / 2), column 8j + 2t + e % 2 (g = lane / 4, t = lane % 4).
//
// Shared-memory operands, without swizzling: B is stored in "core matrices" of 8 rows × 16 bytes (8 bf16), each
// 128 contiguous bytes, its rows 16 bytes apart. Core matrices adjacent along K lie `k_stride` bytes apart and
// those adjacent along N `n_stride` bytes apart (the descriptor's leading and stride byte offsets). A core
// matrix's rows run along N with K contiguous in each (K-major: B[k][n] at n·16 + k·2 inside it), or, with
// kTransposeB, along K with N contiguous (MN-major: B[k][n] at k·16 + n·2).
#pragma once
#include <cstdint>

#include "replica/kernels/cuda/mma.cuh"

namespace replica::cuda {

// The address of p in the block's shared-memory window.
__device__ inline uint32_t shared_address(const void* p) {
#ifdef REPLICA_CUDA_EMULATION
  return cuda_emu::shared_offset(p);
#else
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#endif
}

// The matrix descriptor of an operand at `p` (16-byte aligned; no swizzling, base offset 0): start address,
// leading (K) and stride (M or N) byte offsets, each in units of 16 bytes.
__device__ inline uint64_t smem_descriptor(const void* p, uint32_t k_stride, uint32_t mn_stride) {
  return uint64_t((shared_address(p) & 0x3FFFF) >> 4) | uint64_t((k_stride >> 4) & 0x3FFF) << 16 |
         uint64_t((mn_stride >> 4) & 0x3FFF) << 32;
}

// d = a·b (+ d when `accumulate`) for m64n64k16, bf16 operands, fp32 accumulators; A from registers, B from
// shared memory. Asynchronous: wgmma_fence() before the first product whose registers ordinary instructions
// wrote, wgmma_commit() after the products of a batch, and wgmma_wait<0>() before reading their results.
template <bool kTransposeB>
__device__ inline void wgmma_m64n64k16(float (&d)[32], const uint32_t (&a)[4], uint64_t b, bool accumulate) {
#if defined(REPLICA_CUDA_EMULATION)
  cuda_emu::wgmma_m64n64k16_bf16(d, a, b, kTransposeB, accumulate);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
      "%23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int(accumulate)), "n"(int(kTransposeB)));
#else
  __trap();  // built for a target without wgmma (the portable PTX): the host launches these kernels on sm_90 only
#endif
}

// The same with A read from shared memory too, through descriptor `a` (K-major: core matrices of 8 rows of A ×
// 8 k, or with kTransposeA MN-major: 8 k × 8 rows; warp w multiplies rows 16w … 16w + 15), and B K-major or, with
// kTransposeB, MN-major.
template <bool kTransposeA = false, bool kTransposeB = false>
__device__ inline void wgmma_m64n64k16_ss(float (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
#if defined(REPLICA_CUDA_EMULATION)
  cuda_emu::wgmma_m64n64k16_bf16_ss(d, a, b, kTransposeA, kTransposeB, accumulate);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
      "%23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, %35, %36;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(int(accumulate)), "n"(int(kTransposeA)), "n"(int(kTransposeB)));
#else
  __trap();
#endif
}

// Orders the registers ordinary instructions wrote (A fragments, accumulators) before the products that read them.
__device__ inline void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(REPLICA_CUDA_EMULATION)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
// Closes the batch of products issued since the last commit.
__device__ inline void wgmma_commit() {
#if defined(REPLICA_CUDA_EMULATION)
  cuda_emu::wgmma_commit();
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Returns once at most kPending batches are still running.
template <int kPending>
__device__ inline void wgmma_wait() {
#if defined(REPLICA_CUDA_EMULATION)
  cuda_emu::wgmma_wait(kPending);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}
// Makes shared memory that threads wrote (stores, cp.async) visible to the tensor cores' reads through
// descriptors, which go through the async proxy; a barrier after it publishes every thread's writes.
__device__ inline void fence_shared_for_wgmma() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(REPLICA_CUDA_EMULATION)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

}  // namespace replica::cuda
