// The CUDA execution model on the CPU (tests/cuda_emu/README.md). A launch runs its blocks one after another;
// the threads of a block are fibers on the calling thread, each running until it reaches a barrier
// (__syncthreads, __syncwarp, a shuffle, a warp-wide wmma or mma operation), so a block's threads interleave
// at every barrier as they may on a GPU, and never between barriers. That is enough to run a kernel's real code and to catch what the hardware
// leaves undefined: threads waiting at barriers that can never all open (reported, where a GPU would hang),
// a shuffle or wmma operation that only part of a warp performs, reads of shared or freshly allocated memory
// nobody wrote (poisoned with NaN bytes), wmma pointers and strides that break the alignment rules, and
// launches over the shared-memory or thread limits. Threads that have exited count as arrived at
// __syncthreads, as on Volta and later GPUs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "cuda_runtime_api.h"

namespace cuda_emu {

// Runs body() as kernel `kernel` (its address: attributes set by cudaFuncSetAttribute apply) on every thread of
// grid × block with `smem_bytes` of dynamic shared memory. Returns the error a GPU launch would report;
// a failure of the kernel (a divergent barrier, a wmma misuse, an exception) is cudaErrorLaunchFailure, as
// for a kernel that faults, and its description goes to stderr.
cudaError_t launch(const void* kernel, dim3 grid, dim3 block, size_t smem_bytes, const std::function<void()>& body);

// The running thread's coordinates. Kernels read threadIdx and blockDim in their inner loops, so these are loads
// from what the emulator sets at each switch and each block, not calls into it.
struct ThreadCoordinates {
  uint3 index;
  int lane;
};
struct BlockCoordinates {
  uint3 index;
  dim3 block_dim, grid_dim;
};
extern const ThreadCoordinates* running_thread;  // null outside a launch
extern BlockCoordinates running_block;
[[noreturn]] void outside_launch();
inline const ThreadCoordinates& running() {
  if (!running_thread) [[unlikely]]
    outside_launch();
  return *running_thread;
}
inline const uint3& thread_index() { return running().index; }
inline int lane() { return running().lane; }
inline const uint3& block_index() { return running_block.index; }
inline const dim3& block_dim() { return running_block.block_dim; }
inline const dim3& grid_dim() { return running_block.grid_dim; }
unsigned char* dynamic_shared_memory();

// Barriers. A kernel's violation of the execution model (see fail) ends the launch with an error.
void sync_block();
void sync_warp(unsigned mask);
// A full-warp exchange: every lane offers `value` and receives the value offered by lane `source(lane)`.
uint64_t exchange(unsigned mask, uint64_t value, int source_lane);
// A full-warp gather: every lane offers `bytes` and receives all 32 lanes' offers, in lane order (read in place:
// valid until the lane's next warp barrier).
const void* gather(const void* mine, size_t bytes);
// PTX mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (ptx.cc): d += a·b over the warp's fragments.
void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
// PTX ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 (ptx.cc): lane l names row l % 8 of 8 × 8 matrix l / 8
// (16 bytes of shared memory); r[i] receives matrix i's elements [l / 4][2(l % 4), 2(l % 4) + 1], or with
// `transpose` its elements [2(l % 4)][l / 4] and [2(l % 4) + 1][l / 4].
void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transpose);
// PTX cp.async.cg.shared.global, cp.async.commit_group and cp.async.wait_group: a copy lands in shared memory
// only when its thread waits for its group, so a kernel that reads a tile before its wait (or, in another
// thread, before the barrier after the wait) reads the poison or stale bytes it would race with on a GPU.
void async_copy(void* shared_dst, const void* global_src, size_t bytes);
void async_commit();
void async_wait(int pending_groups);
// Fails unless [p, p + bytes) lies in the launch's dynamic shared memory and p is 16-byte aligned.
void check_shared(const void* p, size_t bytes, const char* op);
// p's offset in the launch's dynamic shared memory (the emulated __cvta_generic_to_shared); fails outside it.
uint32_t shared_offset(const void* p);
// PTX wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 with A from registers (ptx.cc), run by each warp on
// its 16 rows: d = a·B (+ d), B read through the shared-memory descriptor `b` (no swizzling; MN-major with
// transpose_b), the result held until the wait (below).
void wgmma_m64n64k16_bf16(float (&d)[32], const uint32_t (&a)[4], uint64_t b, bool transpose_b, bool accumulate);
// wgmma's asynchrony: a product's result lands in its accumulators only at the wgmma.wait_group that covers its
// commit group (until then they read NaN, as a read before the wait races on a GPU); a product on accumulators
// with one in flight takes that one's result as its input, as chained products do on a GPU.
const float* wgmma_in_flight(const float* d);  // the latest result in flight for d, or null
void wgmma_issue(float (&d)[32], const float (&result)[32]);
void wgmma_commit();
void wgmma_wait(int pending_groups);
// The same with A read through descriptor `a` too (K-major, or MN-major with transpose_a; warp w of the warpgroup
// takes rows 16w … 16w + 15).
void wgmma_m64n64k16_bf16_ss(float (&d)[32], uint64_t a, uint64_t b, bool transpose_a, bool transpose_b,
                             bool accumulate);
// PTX mbarrier (shared-memory barrier objects, 8 bytes, 8-byte aligned, in the launch's dynamic shared memory) with
// transaction counts. init: `count` arrivals expected per phase, phase 0, no transactions. arrive: `count` arrivals
// (returns the phase it arrived on, the state token). arrive_expect_tx: the same with `bytes` added to the
// transaction count first (one arrival). expect_tx: bytes only. A phase completes when its pending arrivals and its
// transaction count are both zero. test_wait_parity: whether the phase of parity `parity` has completed (the current
// phase's parity differs), at once; wait_parity: mbarrier.try_wait.parity in a loop, which here blocks the thread
// until then (other threads run meanwhile). Misuse fails the launch: an uninitialised barrier, more arrivals than
// the phase expects, a transaction count outside ±(2^20 − 1).
void mbarrier_init(void* bar, uint32_t count);
uint64_t mbarrier_arrive(void* bar, uint32_t count = 1);
uint64_t mbarrier_arrive_expect_tx(void* bar, uint32_t bytes);
void mbarrier_expect_tx(void* bar, uint32_t bytes);
bool mbarrier_test_wait_parity(void* bar, uint32_t parity);
void mbarrier_wait_parity(void* bar, uint32_t parity);
// PTX cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes: `bytes` (a nonzero multiple of 16, both
// addresses 16-byte aligned) from global to shared memory, completing `bytes` transactions on `bar` when it lands.
// The destination reads NaN from the issue until the copy lands, which is when no thread of the block can run
// otherwise and one waits on `bar` (copies land in issue order until the waited phase completes): the latest a GPU
// allows. A block that ends with copies in flight fails.
void bulk_copy(void* shared_dst, const void* global_src, uint32_t bytes, void* bar);
// PTX setmaxnreg.{inc,dec}.sync.aligned.u32: accepted and ignored (registers are not emulated), with the count's
// range checked and every lane of the warp required to execute it.
void setmaxnreg(uint32_t registers);
// Turns at an ordered sum (kernels/cuda/turns.cuh): blocks run in launch order here, so the turn a block waits for
// must already have been passed by a block before it; otherwise the launch fails (a wrong order, which on a GPU
// spins on a block that is not yet running, or forever).
void wait_for_turn(const int* counter, int turn);
// Waits until every lane of the warp performs the same warp-wide operation `op` (a wmma load, store or
// product: collective on a GPU, so no lane stores a tile before every lane has loaded what it overwrites).
void warp_collective(const char* op);
[[noreturn]] void fail(const char* what);

}  // namespace cuda_emu
