// Device-side helpers shared by the kernels: launch checks, grid sizes and fixed-order block reductions.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// replica::to_bf16 (core/bf16.h) bit for bit: round to nearest even, and a NaN keeps its sign and top payload
// bits with the quiet bit set. (__float2bfloat16_rn gives the same bits for every number but turns every
// NaN into the canonical 0x7fff, so the GPU's bf16 values would differ from the CPU's where a NaN appears.)
__device__ inline uint16_t to_bf16_bits(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// kernel<<<grid, block, smem_bytes, stream>>>(args...), then reports a bad launch configuration at once
// (execution errors surface at the next synchronization). Every launch goes through here so that the same
// kernels also run on tests/cuda_emu, the CPU emulation of CUDA that CI checks them on.
template <typename... Params, typename... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
            cudaStream_t stream, Args&&... args) {
#ifdef REPLICA_CUDA_EMULATION
  cuda_emu::order_stream(stream);  // the stream's earlier copies first, as on a GPU
  cuda_emu::launch(reinterpret_cast<const void*>(kernel), grid, block, smem_bytes, [&] { kernel(args...); });
#else
  kernel<<<grid, block, smem_bytes, stream>>>(std::forward<Args>(args)...);
#endif
  check_cuda(cudaGetLastError(), name);
}

// The block's dynamic shared memory (the launch's smem_bytes), 128-byte aligned.
__device__ inline unsigned char* dynamic_shared_memory() {
#ifdef REPLICA_CUDA_EMULATION
  return cuda_emu::dynamic_shared_memory();
#else
  extern __shared__ __align__(128) unsigned char dynamic_smem[];
  return dynamic_smem;
#endif
}

// Sum over a warp by butterfly shuffles: a fixed pairing, so the result is the same on every run.
template <typename T>
__device__ inline T warp_sum(T x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ inline float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024): warps first, then warp 0 adds the warp
// sums in warp order. Every thread gets the result. `shared` holds 32 values of T.
template <typename T>
__device__ inline T block_sum(T x, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  x = warp_sum(x);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  x = lane < warps ? shared[lane] : T(0);
  if (warp == 0) x = warp_sum(x);
  if (threadIdx.x == 0) shared[0] = x;
  __syncthreads();
  return shared[0];
}

__device__ inline float block_max(float x, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  x = lane < warps ? shared[lane] : -INFINITY;
  if (warp == 0) x = warp_max(x);
  if (threadIdx.x == 0) shared[0] = x;
  __syncthreads();
  return shared[0];
}

}  // namespace replica::cuda
