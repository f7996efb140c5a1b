// Blocks that take turns at adding into the same output, in a fixed order, so that the sum's rounding is the same on
// every run (FlashAttention-3's deterministic backward orders its dQ adds the same way, with a semaphore per query
// tile). A turn counter is an int in global memory, zeroed before the launch; the block whose turn is `turn` waits
// until the counter holds it, adds, and passes the turn on by storing the next one.
//
// The order must follow the launch order: a block may wait only for blocks with a smaller linear index. A GPU
// dispatches blocks in that order, so a block that waits finds the one it waits for running or done (CUTLASS's
// serial split-K reduction relies on the same). The emulation runs blocks one after another in that order, so the
// turn must already have come when a block asks for it: anything else is a wrong order (on a GPU a spin on a block
// not yet dispatched, or forever), and the launch fails there.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace replica::cuda {

// Returns, to every thread of the block, once *counter == turn: thread 0 polls with acquire loads (every write
// the block that passed the turn made before passing it is then visible), the barrier after it holds the others.
// A turn that has not come after 2²⁴ polls (a second or more) is a broken order: the kernel traps rather than hang
// the GPU (a legitimate wait is a few of the previous block's steps, microseconds each).
__device__ inline void wait_for_turn(const int* counter, int turn) {
#ifdef REPLICA_CUDA_EMULATION
  if (threadIdx.x == 0) cuda_emu::wait_for_turn(counter, turn);
#else
  if (threadIdx.x == 0) {
    for (int64_t polls = 0;; polls++) {
      int value;
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(value) : "l"(counter) : "memory");
      if (value == turn) break;
      if (polls > (int64_t(1) << 24)) __trap();  // no printf: a call would make ptxas serialise the caller's wgmma
      __nanosleep(64);
    }
  }
#endif
  __syncthreads();
}

// Every thread of the block is done with its part of the turn (the barrier); thread 0 then stores `next` with
// release semantics, which publishes the whole block's writes made before the barrier.
__device__ inline void pass_turn(int* counter, int next) {
  __syncthreads();
#ifdef REPLICA_CUDA_EMULATION
  if (threadIdx.x == 0) *counter = next;
#else
  if (threadIdx.x == 0) asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(counter), "r"(next) : "memory");
#endif
}

}  // namespace replica::cuda
