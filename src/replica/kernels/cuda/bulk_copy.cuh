// Hopper's asynchronous transaction barriers and bulk copies (sm_90): the pieces of FlashAttention-3's producer /
// consumer pipelines. Under tests/cuda_emu the same calls run on the emulator's model of each instruction
// (cuda_emu.h), which the emulator's tests check against the PTX ISA's definitions.
//
// An mbarrier is an 8-byte object in shared memory. init(count) expects `count` arrivals per phase; a phase
// completes when all of them have arrived and its transaction count (bytes: arrive_expect_tx adds, each bulk copy's
// landing subtracts) is back at zero, and the next phase begins. wait(parity) returns once the phase of that parity
// has completed: a consumer waits on a "full" barrier with the parity of the use it needs (use n of a ring slot:
// n & 1), a producer on an "empty" one with the opposite ((n & 1) ^ 1, which a fresh barrier satisfies at once).
#pragma once
#include <cstdint>

#include "replica/kernels/cuda/wgmma.cuh"

namespace replica::cuda {

__device__ inline void mbarrier_init(uint64_t* bar, uint32_t count) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::mbarrier_init(bar, count);
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count) : "memory");
#endif
}

// Makes the initialised barriers visible to the other threads' arrivals and to the bulk copies' completions; a
// __syncthreads() follows it.
__device__ inline void fence_mbarrier_init() {
#if !defined(REPLICA_CUDA_EMULATION)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

__device__ inline void mbarrier_arrive(uint64_t* bar) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::mbarrier_arrive(bar);
#else
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
#endif
}

// One arrival, after adding `bytes` to the phase's transaction count (the bytes this thread's copies will land).
__device__ inline void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::mbarrier_arrive_expect_tx(bar, bytes);
#else
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
#endif
}

// Returns once the phase of parity `parity` has completed (acquire: what the arrivals released, and the bytes the
// bulk copies landed, are visible, also to wgmma's reads).
__device__ inline void mbarrier_wait(uint64_t* bar, uint32_t parity) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::mbarrier_wait_parity(bar, parity);
#else
  asm volatile(
      "{\n.reg .pred done;\nLAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra LAB_WAIT;\n}\n" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
#endif
}

// `bytes` (a nonzero multiple of 16; both addresses 16-byte aligned) from global to shared memory by the copy
// engine (TMA), completing `bytes` transactions on `bar` when they land. The issuing thread does not wait.
__device__ inline void bulk_copy(void* shared_dst, const void* global_src, uint32_t bytes, uint64_t* bar) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::bulk_copy(shared_dst, global_src, bytes, bar);
#else
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          shared_address(shared_dst)),
      "l"(global_src), "r"(bytes), "r"(shared_address(bar))
      : "memory");
#endif
}

// Orders this thread's ordinary shared-memory stores before reads through the async proxy (wgmma descriptors, bulk
// copies) that an arrival it makes next releases.
__device__ inline void fence_proxy_async() {
#if !defined(REPLICA_CUDA_EMULATION)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// setmaxnreg: a warpgroup gives up registers (kIncrease false) or takes them from the pool that others gave up,
// to kRegisters a thread (a multiple of 8 in [24, 256]). Every thread of the warpgroup executes it.
template <bool kIncrease, int kRegisters>
__device__ inline void setmaxnreg() {
  static_assert(kRegisters >= 24 && kRegisters <= 256 && kRegisters % 8 == 0, "setmaxnreg's range");
#if defined(REPLICA_CUDA_EMULATION)
  cuda_emu::setmaxnreg(kRegisters);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kIncrease) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
  else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#endif
}

}  // namespace replica::cuda
