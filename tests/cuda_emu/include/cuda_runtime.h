// CPU emulation of CUDA C++'s device side (tests/cuda_emu/README.md): the qualifiers, built-in variables,
// barriers, warp shuffles and math intrinsics that replica's kernels use, mapped onto cuda_emu.h's fibers.
// A .cu file compiles as C++ against this header; `__shared__` variables become function statics, which is
// sound because the emulator runs one block at a time.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_emu.h"
#include "cuda_runtime_api.h"

#define REPLICA_CUDA_EMULATION 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

#define threadIdx (::cuda_emu::thread_index())
#define blockIdx (::cuda_emu::block_index())
#define blockDim (::cuda_emu::block_dim())
#define gridDim (::cuda_emu::grid_dim())
constexpr int warpSize = 32;

inline void __syncthreads() { cuda_emu::sync_block(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { cuda_emu::sync_warp(mask); }

template <typename T>
T emu_shuffle(unsigned mask, T value, int source_lane) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = cuda_emu::exchange(mask, bits, source_lane);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}
template <typename T>
T __shfl_sync(unsigned mask, T value, int source_lane, int width = 32) {
  const int base = cuda_emu::lane() & ~(width - 1);
  return emu_shuffle(mask, value, base + (source_lane & (width - 1)));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  const int lane = cuda_emu::lane(), target = lane ^ lane_mask;
  return emu_shuffle(mask, value, target < ((lane & ~(width - 1)) + width) ? target : lane);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const int lane = cuda_emu::lane(), target = lane + int(delta);
  return emu_shuffle(mask, value, target < ((lane & ~(width - 1)) + width) ? target : lane);
}

// Device overloads CUDA provides in the global namespace.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }

// The intrinsics the kernels use. The _rn forms are IEEE operations, never contracted into FMAs: the emulation
// target is built with -ffp-contract=off, as nvcc treats these intrinsics. __expf is the GPU's fast approximation; the emulator
// uses the exact function (the kernels' error bounds cover the difference).
inline float __expf(float x) { return expf(x); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
