// The CUDA execution model on the CPU (cuda_emu.h): blocks one after another, a block's threads as fibers.
//
// Scheduling: the fibers of a block run in rounds, each until it blocks at a barrier or exits. A warp barrier
// (__syncwarp, a shuffle, a wmma load or store) opens when every lane of the warp waits at it; the block
// barrier opens when every thread that has not exited waits at it. When nothing can run and threads remain,
// the kernel has barriers that cannot all open: the launch fails with a description of who waits where.
// A thread waiting on an mbarrier phase that has not completed blocks too, and runs again (in the next round) when
// the phase completes; bulk copies land when nothing else can run (the latest schedule a GPU allows).
#include <pthread.h>
#include <sys/mman.h>
#ifndef __x86_64__
#include <ucontext.h>
#endif

#include <algorithm>
#include <array>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_emu.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace cuda_emu {

const ThreadCoordinates* running_thread = nullptr;
BlockCoordinates running_block;

namespace {

constexpr int kWarpSize = 32;
constexpr size_t kStackBytes = size_t(256) << 10;  // wmma fragments hold whole tiles here: generous stacks
constexpr size_t kGuardBytes = 4096;                // an overflow faults instead of corrupting a neighbour
constexpr int kMaxThreadsPerBlock = 1024;
constexpr size_t kDefaultSharedBytes = 48 << 10;   // dynamic shared memory allowed without the attribute
constexpr size_t kMaxSharedBytes = 227 << 10;      // sharedMemPerBlockOptin on Hopper
constexpr size_t kSharedAlignment = 128;
constexpr int64_t kMaxTransactionBytes = (int64_t(1) << 20) - 1;  // an mbarrier's tx-count range, either sign
constexpr uint32_t kMaxArrivals = (uint32_t(1) << 20) - 1;

// ---- Fiber contexts --------------------------------------------------------------------------------------------
// A switch happens at every barrier of every thread, so it must be cheap: on x86-64 it pushes the callee-saved
// registers on the old stack and pops them from the new one (swapcontext would also make two signal-mask system
// calls per switch, which made the emulation twice as slow). The FP control words are not switched: kernels
// never change them. Elsewhere, ucontext.

#ifdef __x86_64__
struct Context {
  void* sp = nullptr;
  const void* stack_bottom = nullptr;  // for AddressSanitizer (below); the scheduler's is the launching thread's
  size_t stack_size = 0;
};

extern "C" void cuda_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .globl cuda_emu_switch
  .type cuda_emu_switch, @function
cuda_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_emu_switch, .-cuda_emu_switch
)");

// A frame that cuda_emu_switch "returns" from into entry(), with zeroed registers and the stack aligned as at a
// function's entry (rsp + 8 a multiple of 16).
void start_context(Context& c, unsigned char* stack, size_t bytes, void (*entry)()) {
  auto* top = reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15));
  uint64_t* sp = top - 8;
  for (int r = 0; r < 6; r++) sp[r] = 0;  // r15, r14, r13, r12, rbx, rbp
  sp[6] = reinterpret_cast<uint64_t>(entry);
  sp[7] = 0;  // entry's return address: it never returns
  c.sp = sp;
}

void raw_switch(Context& from, Context& to) { cuda_emu_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
};

void start_context(Context& c, unsigned char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;  // entry never returns
  makecontext(&c.uc, entry, 0);
}

void raw_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// AddressSanitizer (make test SANITIZE=1) keeps one stack per thread: a switch by hand must tell it which stack
// runs next, each arrival must say it has arrived, and a stack that a new block's fiber reuses must lose the poison
// of the frames the old fiber left on it. Without ASan these are no-ops.
#if defined(__SANITIZE_ADDRESS__)
void fiber_stack(Context& c, unsigned char* stack, size_t bytes) {
  c.stack_bottom = stack;
  c.stack_size = bytes;
  __asan_unpoison_memory_region(stack, bytes);
}
void thread_stack(Context& c) {
  pthread_attr_t attr;
  void* bottom = nullptr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &bottom, &c.stack_size);
    pthread_attr_destroy(&attr);
  }
  c.stack_bottom = bottom;
}
void arrived(void* fake_stack) { __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr); }
void switch_context(Context& from, Context& to) {
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, to.stack_bottom, to.stack_size);
  raw_switch(from, to);
  arrived(fake_stack);
}
#else
void fiber_stack(Context&, unsigned char*, size_t) {}
void thread_stack(Context&) {}
void arrived(void*) {}
void switch_context(Context& from, Context& to) { raw_switch(from, to); }
#endif

// ---- Blocks of fibers ---------------------------------------------------------------------------------------

enum class State { runnable, at_block_barrier, at_warp_barrier, at_mbarrier, exited };

struct AsyncCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

// PTX mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier"): a 64-bit object in
// shared memory with an expected arrival count, the pending arrivals of its current phase, a transaction count
// (bytes that asynchronous copies still have to complete: expect-tx adds, complete-tx subtracts) and the phase.
// The current phase completes when both the pending arrivals and the transaction count are zero: the phase number
// advances and the pending count is reset to the expected count. A wait on parity P returns once the phase with
// parity P has completed, i.e. while the current phase's parity differs from P. The emulator keeps this state beside
// the object's address; the bulk copies that complete on the barrier wait in `in_flight` until they land.
struct BulkCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

struct MBarrier {
  uint32_t expected = 0, pending = 0;
  int64_t tx = 0;
  uint32_t phase = 0;
  std::deque<BulkCopy> in_flight;
};

// A wgmma product issued and not yet waited for: its result, and the commit group it belongs to (-1: open).
struct PendingProduct {
  float* d;
  std::array<float, 32> result;
  int64_t group;
};

struct Fiber {
  Context context;
  unsigned char* stack = nullptr;  // kStackBytes after a guard page
  ThreadCoordinates at{};          // threadIdx and lane, read through running_thread
  int linear = 0;
  State state = State::runnable;
  const char* warp_op = nullptr;   // the warp barrier it waits at: "__syncwarp", "a shuffle", a wmma operation
  const void* payload = nullptr;   // what it offers the warp's gather (shuffles, mma.sync), payload_bytes of it
  size_t payload_bytes = 0;
  // cp.async: the copies issued since the last commit, and the committed groups not yet waited for.
  std::vector<AsyncCopy> open_copies;
  std::deque<std::vector<AsyncCopy>> copy_groups;
  // wgmma: the products in flight and the number of commit groups closed so far.
  std::vector<PendingProduct> products;
  int64_t product_groups = 0;
  // mbarrier: the barrier (offset in shared memory) and parity it waits on.
  uint32_t mbarrier = 0, parity = 0;
};

struct Emulator {
  std::mutex mutex;  // one launch at a time: the fibers share the block's statics
  std::vector<Fiber> fibers;
  // The block's dynamic shared memory: the launch's bytes, rounded to the 128-byte alignment the kernels declare,
  // ending at an inaccessible page, so a kernel that overruns the shared memory it asked for faults.
  unsigned char* shared = nullptr;
  size_t shared_bytes = 0;  // as rounded
  void* shared_mapping = nullptr;
  size_t shared_mapped = 0;
  Context scheduler;
  Fiber* current = nullptr;
  const std::function<void()>* body = nullptr;
  std::exception_ptr error;
  std::string failure;
  std::map<const void*, int> max_dynamic_shared;  // cudaFuncAttributeMaxDynamicSharedMemorySize per kernel
  cudaError_t last_error = cudaSuccess;           // for cudaGetLastError

  // The running block's schedule: this round's ready threads (from ready_pos on), the next round's, and how
  // many threads wait at each barrier.
  size_t threads = 0;
  std::vector<Fiber*> ready, next;
  size_t ready_pos = 0;
  std::vector<size_t> at_warp_barrier;
  size_t at_block_barrier = 0, exited = 0;
  std::vector<std::vector<unsigned char>> gathered;  // per warp: every lane's payload at its last gather
  std::map<uint32_t, MBarrier> mbarriers;  // the block's initialised mbarriers, by offset in shared memory
  size_t at_mbarrier = 0;
  // CUDA_EMU_ORDER=reverse: threads start, and leave each barrier, in reverse order. A missing barrier
  // between a write and a read by another thread shows in one of the two orders (the reader runs first, and
  // reads NaN poison or a stale value), so CI runs the kernel checks in both.
  const bool reversed = [] {
    const char* order = std::getenv("CUDA_EMU_ORDER");
    return order && std::string(order) == "reverse";
  }();

  ~Emulator() {
    for (Fiber& f : fibers) munmap(f.stack - kGuardBytes, kStackBytes + kGuardBytes);
    if (shared_mapping) munmap(shared_mapping, shared_mapped);
  }
};

// Every emulated instruction asks for the emulator, often several times: the guarded construction stays out of
// line, so that the accessor inlines to a load and a test (inlined, it made GCC save six registers on every call,
// once 40% of the wgmma checks' time).
[[gnu::noinline]] Emulator& construct_emulator() {
  static Emulator e;
  return e;
}

Emulator& emulator() {
  static Emulator& e = construct_emulator();
  return e;
}

Fiber& self() {
  Fiber* f = emulator().current;
  if (!f) outside_launch();
  return *f;
}

void account(Emulator& e, Fiber& f);

// The fiber that runs next (null: none), and the coordinates threadIdx and lane read (cuda_emu.h) with it.
void set_current(Emulator& e, Fiber* f) {
  e.current = f;
  running_thread = f ? &f->at : nullptr;
}

// The current thread blocks (or exits): the barrier it completes opens, and the next ready thread of the
// round runs; the scheduler runs when the round is over or a thread has failed. Threads switch to each other
// directly, so a barrier costs one switch per thread, not two.
void yield(State state) {
  Emulator& e = emulator();
  Fiber& f = *e.current;
  f.state = state;
  if (!e.error) account(e, f);
  if (!e.error && e.ready_pos < e.ready.size()) {
    set_current(e, e.ready[e.ready_pos++]);
    switch_context(f.context, e.current->context);
  } else {
    switch_context(f.context, e.scheduler);
  }
}

void run_fiber() {
  arrived(nullptr);  // the switch that started this fiber ends here, not in switch_context
  Emulator& e = emulator();
  Fiber& f = *e.current;
  f.open_copies.clear();  // a previous block's copies that were never waited for
  f.copy_groups.clear();
  f.products.clear();
  f.product_groups = 0;
  try {
    (*e.body)();
    if (!f.products.empty()) fail("a thread exited with a wgmma product it never waited for (wgmma.wait_group)");
  } catch (...) {
    if (!e.error) e.error = std::current_exception();
  }
  yield(State::exited);  // never resumed: the next block starts the fiber afresh
}

const char* state_name(const Fiber& f) {
  switch (f.state) {
    case State::runnable: return "runnable";
    case State::at_block_barrier: return "__syncthreads";
    case State::at_warp_barrier: return f.warp_op;
    case State::at_mbarrier: return "an mbarrier wait";
    case State::exited: return "exited";
  }
  return "?";
}

std::string describe(const Fiber& f) {
  std::string at = state_name(f);
  if (f.state == State::at_mbarrier)
    at += " (barrier at shared offset " + std::to_string(f.mbarrier) + ", parity " + std::to_string(f.parity) + ")";
  return "thread (" + std::to_string(f.at.index.x) + "," + std::to_string(f.at.index.y) + "," +
         std::to_string(f.at.index.z) + ") at " + at;
}

[[noreturn]] void fail_block(const std::string& what) {
  const uint3& b = running_block.index;
  throw std::runtime_error("block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) +
                           "): " + what);
}

// Opens the barrier that every lane of warp w waits at, the lanes joining the next round; the lanes must agree
// on the kind of barrier. A gather takes every lane's payload now, before any lane moves on.
void release_warp(Emulator& e, size_t w) {
  std::vector<Fiber>& fibers = e.fibers;
  const size_t begin = w * kWarpSize, end = std::min(e.threads, begin + kWarpSize);
  for (size_t i = begin; i < end; i++)
    if (fibers[i].warp_op != fibers[begin].warp_op && std::strcmp(fibers[i].warp_op, fibers[begin].warp_op) != 0)
      fail_block("lanes of warp " + std::to_string(w) + " wait at different warp barriers: " +
                 describe(fibers[begin]) + ", " + describe(fibers[i]));
  if (const size_t bytes = fibers[begin].payload_bytes; bytes > 0) {
    std::vector<unsigned char>& all = e.gathered[w];
    all.resize(kWarpSize * bytes);
    const size_t offered = (end - begin) * bytes;
    std::memset(all.data() + offered, 0xff, all.size() - offered);  // lanes past the block's end offer NaN bytes
    for (size_t i = begin; i < end; i++) {
      if (fibers[i].payload_bytes != bytes) fail_block("lanes of warp " + std::to_string(w) + " gather different sizes");
      if (bytes == sizeof(uint64_t))  // a shuffle: a fixed-size copy, not a call
        std::memcpy(all.data() + (i - begin) * sizeof(uint64_t), fibers[i].payload, sizeof(uint64_t));
      else
        std::memcpy(all.data() + (i - begin) * bytes, fibers[i].payload, bytes);
    }
  }
  for (size_t i = begin; i < end; i++) {
    Fiber& f = fibers[i];
    f.state = State::runnable;
    e.next.push_back(&f);
  }
  if (e.reversed) std::reverse(e.next.end() - std::ptrdiff_t(end - begin), e.next.end());
}

// Counts the thread that just blocked or exited at its barrier; a warp barrier that every lane has reached
// opens, its lanes joining the next round.
void account(Emulator& e, Fiber& f) {
  if (f.state == State::exited) e.exited++;
  if (f.state == State::at_block_barrier) e.at_block_barrier++;
  if (f.state == State::at_mbarrier) e.at_mbarrier++;
  if (f.state == State::at_warp_barrier) {
    const size_t w = size_t(f.linear) / kWarpSize;
    if (++e.at_warp_barrier[w] == std::min(e.threads, (w + 1) * kWarpSize) - w * kWarpSize) {
      e.at_warp_barrier[w] = 0;
      release_warp(e, w);
    }
  }
}

// Completes the current phase of `bar` if nothing is pending: the waiting threads join the next round.
void complete_phase_if_done(Emulator& e, uint32_t offset, MBarrier& bar) {
  if (bar.pending != 0 || bar.tx != 0) return;
  bar.phase++;
  bar.pending = bar.expected;
  const size_t first = e.next.size();
  for (size_t i = 0; i < e.threads; i++) {
    Fiber& f = e.fibers[i];
    if (f.state == State::at_mbarrier && f.mbarrier == offset) {  // waited on the parity that just completed
      f.state = State::runnable;
      e.at_mbarrier--;
      e.next.push_back(&f);
    }
  }
  if (e.reversed) std::reverse(e.next.begin() + std::ptrdiff_t(first), e.next.end());
}

// When no thread can run: the bulk copies in flight to barriers that threads wait on land, in issue order, each
// barrier's until its phase completes. True if that released a thread.
bool land_bulk_copies(Emulator& e) {
  if (e.at_mbarrier == 0) return false;
  for (auto& [offset, bar] : e.mbarriers) {
    bool waited = false;
    for (size_t i = 0; i < e.threads && !waited; i++)
      waited = e.fibers[i].state == State::at_mbarrier && e.fibers[i].mbarrier == offset;
    const uint32_t phase = bar.phase;
    while (waited && bar.phase == phase && !bar.in_flight.empty()) {
      const BulkCopy c = bar.in_flight.front();
      bar.in_flight.pop_front();
      std::memcpy(c.dst, c.src, c.bytes);
      bar.tx -= int64_t(c.bytes);
      complete_phase_if_done(e, offset, bar);
    }
  }
  e.ready.swap(e.next);
  e.next.clear();
  return !e.ready.empty();
}

// Runs the block's threads in rounds: each ready thread runs until it blocks or exits; the threads a barrier
// releases run in the next round, in the order they were released (thread order, or its reverse).
void run_block(Emulator& e, size_t threads) {
  std::vector<Fiber>& fibers = e.fibers;
  e.threads = threads;
  e.ready.clear();
  e.next.clear();
  e.at_warp_barrier.assign((threads + kWarpSize - 1) / kWarpSize, 0);
  e.gathered.resize(e.at_warp_barrier.size());
  e.at_block_barrier = e.exited = e.at_mbarrier = 0;
  e.mbarriers.clear();
  const dim3& dim = running_block.block_dim;
  for (size_t i = 0; i < threads; i++) {
    Fiber& f = fibers[i];
    f.linear = int(i);
    f.at.index = {unsigned(i % dim.x), unsigned(i / dim.x % dim.y), unsigned(i / (size_t(dim.x) * dim.y))};
    f.at.lane = int(i % kWarpSize);
    f.state = State::runnable;
    start_context(f.context, f.stack, kStackBytes, run_fiber);
    fiber_stack(f.context, f.stack, kStackBytes);
    e.ready.push_back(&f);
  }
  if (e.reversed) std::reverse(e.ready.begin(), e.ready.end());
  thread_stack(e.scheduler);
  for (;;) {
    e.ready_pos = 0;
    if (!e.ready.empty()) {
      set_current(e, e.ready[e.ready_pos++]);
      switch_context(e.scheduler, e.current->context);  // back when the round is over
      set_current(e, nullptr);
    }
    if (e.error) std::rethrow_exception(e.error);
    e.ready.swap(e.next);
    e.next.clear();
    if (!e.ready.empty()) continue;
    if (e.exited == threads) {
      for (const auto& [offset, bar] : e.mbarriers)
        if (!bar.in_flight.empty())
          fail_block("the block exited with bulk copies in flight to the mbarrier at shared offset " +
                     std::to_string(offset) + " (on a GPU: writes into shared memory no longer its own)");
      break;
    }
    if (land_bulk_copies(e)) continue;  // the waits that only copies in flight can satisfy
    if (e.exited + e.at_block_barrier == threads) {  // exited threads count as arrived
      for (size_t i = 0; i < threads; i++)
        if (fibers[i].state == State::at_block_barrier) {
          fibers[i].state = State::runnable;
          e.ready.push_back(&fibers[i]);
        }
      if (e.reversed) std::reverse(e.ready.begin(), e.ready.end());
      e.at_block_barrier = 0;
      continue;
    }
    // Nothing can run: barriers that cannot all open.
    std::string who;
    for (size_t i = 0; i < threads && who.size() < 400; i++) {
      if (i > 0 && fibers[i].state == fibers[i - 1].state) continue;
      who += (who.empty() ? "" : "; ") + describe(fibers[i]);
    }
    fail_block("deadlock: a barrier not every thread reaches (" + who + ")");
  }
}

cudaError_t check_configuration(const Emulator& e, const void* kernel, dim3 grid, dim3 block, size_t smem_bytes,
                                std::string& why) {
  const size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > kMaxThreadsPerBlock || block.z > 64) {
    why = "block of " + std::to_string(threads) + " threads (1 to 1024, z at most 64)";
    return cudaErrorInvalidConfiguration;
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) {
    why = "grid (" + std::to_string(grid.x) + "," + std::to_string(grid.y) + "," + std::to_string(grid.z) + ")";
    return cudaErrorInvalidConfiguration;
  }
  const auto attribute = e.max_dynamic_shared.find(kernel);
  const size_t allowed = attribute == e.max_dynamic_shared.end() ? kDefaultSharedBytes : size_t(attribute->second);
  if (smem_bytes > allowed) {
    why = std::to_string(smem_bytes) + " bytes of dynamic shared memory, " + std::to_string(allowed) +
          " allowed (cudaFuncAttributeMaxDynamicSharedMemorySize)";
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

void place_shared_memory(Emulator& e, size_t bytes) {
  const size_t rounded = (bytes + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
  if (e.shared_mapping && rounded == e.shared_bytes) return;
  if (e.shared_mapping) munmap(e.shared_mapping, e.shared_mapped);
  e.shared_mapped = (rounded + kGuardBytes - 1) / kGuardBytes * kGuardBytes + kGuardBytes;
  e.shared_mapping = mmap(nullptr, e.shared_mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (e.shared_mapping == MAP_FAILED) throw std::bad_alloc();
  unsigned char* guard = static_cast<unsigned char*>(e.shared_mapping) + e.shared_mapped - kGuardBytes;
  mprotect(guard, kGuardBytes, PROT_NONE);
  e.shared = guard - rounded;
  e.shared_bytes = rounded;
}

void ensure_fibers(Emulator& e, size_t threads) {
  while (e.fibers.size() < threads) {
    void* memory = mmap(nullptr, kStackBytes + kGuardBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    mprotect(memory, kGuardBytes, PROT_NONE);  // stacks grow down into the guard page
    e.fibers.emplace_back();
    e.fibers.back().stack = static_cast<unsigned char*>(memory) + kGuardBytes;
  }
}

cudaError_t run_launch(Emulator& e, const void* kernel, dim3 grid, dim3 block, size_t smem_bytes,
                       const std::function<void()>& body) {
  if (const cudaError_t status = check_configuration(e, kernel, grid, block, smem_bytes, e.failure))
    return status;
  const size_t threads = size_t(block.x) * block.y * block.z;
  ensure_fibers(e, threads);
  place_shared_memory(e, smem_bytes);
  running_block.block_dim = block;
  running_block.grid_dim = grid;
  e.body = &body;
  e.error = nullptr;
  try {
    for (unsigned z = 0; z < grid.z; z++)
      for (unsigned y = 0; y < grid.y; y++)
        for (unsigned x = 0; x < grid.x; x++) {
          running_block.index = {x, y, z};
          std::memset(e.shared, 0xff, e.shared_bytes);  // NaN bytes: reading shared memory nobody wrote shows
          run_block(e, threads);
        }
  } catch (const std::exception& error) {
    e.failure = error.what();
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t launch(const void* kernel, dim3 grid, dim3 block, size_t smem_bytes, const std::function<void()>& body) {
  Emulator& e = emulator();
  std::lock_guard lock(e.mutex);
  e.failure.clear();
  const cudaError_t status = run_launch(e, kernel, grid, block, smem_bytes, body);
  if (status != cudaSuccess) {
    e.last_error = status;
    std::fprintf(stderr, "cuda_emu: launch failed: %s\n", e.failure.c_str());
  }
  return status;
}

void outside_launch() { fail("a device function was called outside a kernel launch"); }
unsigned char* dynamic_shared_memory() { return emulator().shared; }

void sync_block() {
  self();
  yield(State::at_block_barrier);
}

namespace {

// Waits at the warp barrier `op` (every lane of the warp must reach the same one), offering `bytes` of `mine`
// to a gather when bytes > 0. Returns the 32 lanes' offers in lane order: the warp's buffer, which its next
// barrier rewrites only once every lane has left this one.
const void* wait_for_warp(unsigned mask, const char* op, const void* mine = nullptr, size_t bytes = 0) {
  if (mask != 0xffffffffu) fail("the emulator supports full-warp masks only");
  Fiber& f = self();
  f.warp_op = op;
  f.payload = mine;
  f.payload_bytes = bytes;
  yield(State::at_warp_barrier);
  return bytes == 0 ? nullptr : emulator().gathered[size_t(f.linear) / kWarpSize].data();
}

}  // namespace

void sync_warp(unsigned mask) { wait_for_warp(mask, "__syncwarp"); }

void warp_collective(const char* op) { wait_for_warp(0xffffffffu, op); }

uint64_t exchange(unsigned mask, uint64_t value, int source_lane) {
  const Emulator& e = emulator();
  const size_t first_lane = size_t(self().linear) / kWarpSize * kWarpSize;
  if (source_lane < 0 || source_lane >= kWarpSize || first_lane + size_t(source_lane) >= e.threads)
    fail("a shuffle reads from a lane outside the warp");
  const auto* all = static_cast<const uint64_t*>(wait_for_warp(mask, "a shuffle", &value, sizeof value));
  return all[source_lane];
}

const void* gather(const void* mine, size_t bytes) {
  return wait_for_warp(0xffffffffu, "a warp-wide register exchange", mine, bytes);
}

void check_shared(const void* p, size_t bytes, const char* op) {
  const Emulator& e = emulator();
  const auto* c = static_cast<const unsigned char*>(p);
  if (c < e.shared || c + bytes > e.shared + e.shared_bytes)
    fail((std::string(op) + ": the address is not in the launch's dynamic shared memory").c_str());
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    fail((std::string(op) + ": the address is not 16-byte aligned").c_str());
}

uint32_t shared_offset(const void* p) {
  const Emulator& e = emulator();
  const auto* c = static_cast<const unsigned char*>(p);
  if (c < e.shared || c >= e.shared + e.shared_bytes) fail("a shared-memory address outside the launch's shared memory");
  return uint32_t(c - e.shared);
}

void async_copy(void* shared_dst, const void* global_src, size_t bytes) {
  check_shared(shared_dst, bytes, "cp.async");
  if (reinterpret_cast<uintptr_t>(global_src) % bytes != 0) fail("cp.async: the source is not aligned to its size");
  self().open_copies.push_back({shared_dst, global_src, bytes});
}

void async_commit() {
  Fiber& f = self();
  f.copy_groups.push_back(std::move(f.open_copies));
  f.open_copies.clear();
}

void async_wait(int pending_groups) {
  Fiber& f = self();
  while (f.copy_groups.size() > size_t(pending_groups)) {
    for (const AsyncCopy& c : f.copy_groups.front()) std::memcpy(c.dst, c.src, c.bytes);
    f.copy_groups.pop_front();
  }
}

const float* wgmma_in_flight(const float* d) {
  const Fiber& f = self();
  for (auto it = f.products.rbegin(); it != f.products.rend(); ++it)
    if (it->d == d) return it->result.data();
  return nullptr;
}

void wgmma_issue(float (&d)[32], const float (&result)[32]) {
  Fiber& f = self();
  PendingProduct p{d, {}, -1};
  std::copy(result, result + 32, p.result.begin());
  f.products.push_back(p);
  std::fill(d, d + 32, std::numeric_limits<float>::quiet_NaN());  // what a read before the wait would race with
}

void wgmma_commit() {
  Fiber& f = self();
  for (PendingProduct& p : f.products)
    if (p.group < 0) p.group = f.product_groups;
  f.product_groups++;
}

void wgmma_wait(int pending_groups) {
  Fiber& f = self();
  std::vector<PendingProduct> still;
  for (const PendingProduct& p : f.products) {
    if (p.group >= 0 && p.group < f.product_groups - pending_groups) {
      std::copy(p.result.begin(), p.result.end(), p.d);  // in issue order: the last product on d wins
    } else {
      still.push_back(p);
    }
  }
  f.products = std::move(still);
}

namespace {

MBarrier& mbarrier_at(const void* bar, const char* op, uint32_t* offset_out = nullptr) {
  Emulator& e = emulator();
  const auto* c = static_cast<const unsigned char*>(bar);
  if (c < e.shared || c + 8 > e.shared + e.shared_bytes)
    fail((std::string(op) + ": the mbarrier is not in the launch's dynamic shared memory").c_str());
  if (reinterpret_cast<uintptr_t>(bar) % 8 != 0) fail((std::string(op) + ": the mbarrier is not 8-byte aligned").c_str());
  const uint32_t offset = uint32_t(c - e.shared);
  if (offset_out) *offset_out = offset;
  const auto it = e.mbarriers.find(offset);
  if (it == e.mbarriers.end())
    fail((std::string(op) + ": the mbarrier was not initialised (mbarrier.init) in this block").c_str());
  return it->second;
}

// Arrivals and transactions on the current phase; the phase completes when both reach zero.
void arrive_on(MBarrier& bar, uint32_t offset, uint32_t count, int64_t tx, const char* op) {
  Emulator& e = emulator();
  bar.tx += tx;
  if (bar.tx > kMaxTransactionBytes || bar.tx < -kMaxTransactionBytes)
    fail((std::string(op) + ": the mbarrier's transaction count leaves its range (2^20 - 1 bytes)").c_str());
  if (count > bar.pending)
    fail((std::string(op) + ": more arrivals than the mbarrier's current phase expects").c_str());
  bar.pending -= count;
  complete_phase_if_done(e, offset, bar);
}

}  // namespace

void mbarrier_init(void* bar, uint32_t count) {
  Emulator& e = emulator();
  const auto* c = static_cast<const unsigned char*>(bar);
  if (c < e.shared || c + 8 > e.shared + e.shared_bytes || reinterpret_cast<uintptr_t>(bar) % 8 != 0)
    fail("mbarrier.init: the mbarrier is not 8-byte aligned in the launch's dynamic shared memory");
  if (count < 1 || count > kMaxArrivals) fail("mbarrier.init: the count must be in [1, 2^20 - 1]");
  const uint32_t offset = uint32_t(c - e.shared);
  const auto it = e.mbarriers.find(offset);
  if (it != e.mbarriers.end() && !it->second.in_flight.empty())
    fail("mbarrier.init: the mbarrier has bulk copies in flight");
  for (size_t i = 0; i < e.threads; i++)
    if (e.fibers[i].state == State::at_mbarrier && e.fibers[i].mbarrier == offset)
      fail("mbarrier.init: threads wait on the mbarrier");
  MBarrier fresh;
  fresh.expected = fresh.pending = count;
  e.mbarriers[offset] = fresh;
  const uint64_t opaque = count;  // the object's bytes: no longer the shared memory's NaN poison
  std::memcpy(bar, &opaque, sizeof opaque);
}

uint64_t mbarrier_arrive(void* bar, uint32_t count) {
  uint32_t offset = 0;
  MBarrier& b = mbarrier_at(bar, "mbarrier.arrive", &offset);
  const uint64_t state = b.phase;
  arrive_on(b, offset, count, 0, "mbarrier.arrive");
  return state;
}

uint64_t mbarrier_arrive_expect_tx(void* bar, uint32_t bytes) {
  uint32_t offset = 0;
  MBarrier& b = mbarrier_at(bar, "mbarrier.arrive.expect_tx", &offset);
  const uint64_t state = b.phase;
  arrive_on(b, offset, 1, int64_t(bytes), "mbarrier.arrive.expect_tx");
  return state;
}

void mbarrier_expect_tx(void* bar, uint32_t bytes) {
  uint32_t offset = 0;
  MBarrier& b = mbarrier_at(bar, "mbarrier.expect_tx", &offset);
  arrive_on(b, offset, 0, int64_t(bytes), "mbarrier.expect_tx");
}

bool mbarrier_test_wait_parity(void* bar, uint32_t parity) {
  return (mbarrier_at(bar, "mbarrier.test_wait.parity").phase & 1) != (parity & 1);
}

void mbarrier_wait_parity(void* bar, uint32_t parity) {
  uint32_t offset = 0;
  const MBarrier& b = mbarrier_at(bar, "mbarrier.try_wait.parity", &offset);
  if ((b.phase & 1) != (parity & 1)) return;
  Fiber& f = self();
  f.mbarrier = offset;
  f.parity = parity & 1;
  yield(State::at_mbarrier);  // back when the phase completes
}

void bulk_copy(void* shared_dst, const void* global_src, uint32_t bytes, void* bar) {
  Emulator& e = emulator();
  const auto* d = static_cast<unsigned char*>(shared_dst);
  if (d < e.shared || d + bytes > e.shared + e.shared_bytes)
    fail("cp.async.bulk: the destination is not in the launch's dynamic shared memory");
  if (reinterpret_cast<uintptr_t>(shared_dst) % 16 != 0 || reinterpret_cast<uintptr_t>(global_src) % 16 != 0)
    fail("cp.async.bulk: the source and destination must be 16-byte aligned");
  if (bytes == 0 || bytes % 16 != 0) fail("cp.async.bulk: the size must be a nonzero multiple of 16");
  if (static_cast<const unsigned char*>(global_src) >= e.shared &&
      static_cast<const unsigned char*>(global_src) < e.shared + e.shared_bytes)
    fail("cp.async.bulk: the source must be global memory");
  MBarrier& b = mbarrier_at(bar, "cp.async.bulk");
  // Until the copy completes the destination holds nothing a thread may read or count on: NaN bytes now, so that
  // a read before the wait (or a copy into a slot another thread still reads) shows, the data when it lands.
  std::memset(shared_dst, 0xff, bytes);
  b.in_flight.push_back({shared_dst, global_src, bytes});
}

void setmaxnreg(uint32_t registers) {
  if (registers < 24 || registers > 256 || registers % 8 != 0)
    fail("setmaxnreg: the register count must be a multiple of 8 in [24, 256]");
  warp_collective("setmaxnreg");  // .sync.aligned: every thread of the warpgroup executes it (checked per warp)
}

void wait_for_turn(const int* counter, int turn) {
  const int value = *counter;
  if (value != turn)
    fail_block("waits for turn " + std::to_string(turn) + " of a counter that holds " + std::to_string(value) +
               ": no block launched before it passes that turn (on a GPU: a spin on a later block, or forever)");
}

void fail(const char* what) { throw std::runtime_error(what); }

}  // namespace cuda_emu

// The runtime calls about launches.

cudaError_t cudaGetLastError() {
  cuda_emu::Emulator& e = cuda_emu::emulator();
  const cudaError_t status = e.last_error;
  e.last_error = cudaSuccess;
  return status;
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
  }
  return "unrecognized error code";
}

cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attribute, int value) {
  switch (attribute) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || size_t(value) > cuda_emu::kMaxSharedBytes) return cudaErrorInvalidValue;
      cuda_emu::emulator().max_dynamic_shared[kernel] = value;
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      return value >= -1 && value <= 100 ? cudaSuccess : cudaErrorInvalidValue;
  }
  return cudaErrorInvalidValue;
}
