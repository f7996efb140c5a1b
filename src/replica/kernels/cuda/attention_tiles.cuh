// What the tensor-core attention kernels share (attention_mma.cu: mma.sync; attention_wgmma.cu: wgmma): the
// visibility rules, the head dims and tile shapes, and the host-side checks and per-head-dim dispatch.
#pragma once
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "replica/kernels/attention.h"
#include "replica/kernels/attention_mask.h"
#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/precision.h"

namespace replica::cuda::attention_tiles {

using bf16_t = __nv_bfloat16;
using attention_mask::RowMask;
using attention_mask::visible_from;
using attention_mask::visible_until;

// The head dims a tensor-core family has kernels for (each instantiated per D).
template <int... Ds>
struct HeadDims {
  static constexpr bool has(int64_t D) { return ((D == Ds) || ...); }
  static std::string list() {
    std::string text;
    ((text += (text.empty() ? "" : ", ") + std::to_string(Ds)), ...);
    return text;
  }
};
// mma.sync: multiples of 16 up to 128, and 192 and 256 (the seed's 16 × 256 head shape).
using MmaHeadDims = HeadDims<16, 32, 48, 64, 80, 96, 112, 128, 192, 256>;
// wgmma: multiples of 64, whose products are 64 head dims wide, but 192 (whose dK/dV halves would be 96 wide);
// every other head dim takes the mma.sync kernels.
using WgmmaHeadDims = HeadDims<64, 128, 256>;

// Up to D = 128 a warp keeps the A fragments of its rows of Q (and dO) in registers for the whole block. Above, they
// would not fit beside the D / 8 accumulator tiles (128 registers at D = 256), so the products read them from shared
// memory on every use (mma.sync: ldmatrix per fragment; wgmma: A through a descriptor).
template <int D>
constexpr bool kRowsInRegisters = D <= 128;

// Up to D = 128 a dK/dV block accumulates all D columns of both; above (256 registers of accumulators at D = 256), it
// accumulates D / 2 of them, and two blocks share each key tile, each computing Sᵀ and dPᵀ over all D.
template <int D>
constexpr int kDkDvSplits = D > 128 ? 2 : 1;
template <int D>
constexpr int kDkDvColumns = D / kDkDvSplits<D>;

// Row stride (elements) of a bf16 [rows][D] tile (Q, K, V, dO): padded by 16 bytes so that the 8 rows a
// fragment load touches start in different banks.
template <int D>
constexpr int ld_head = D + 8;

// True unless every (query, key) pair of the tiles [i0, i0 + nq) × [j0, j0 + nk) is visible and both tiles are
// full (rows × cols): only such boundary tiles pay for the elementwise mask. The visible pairs are bounded by the
// two corners: the last key against the first query (causal) and the first key against the last query (window
// and document), which the caller knows from whichever side it holds (`last_query_sees_first_key`).
__device__ inline bool needs_mask(int64_t i0, int64_t nq, int rows, int64_t j0, int64_t nk, int cols,
                                  bool last_query_sees_first_key) {
  const bool full = nq == rows && nk == cols;
  const bool causal_ok = j0 + cols - 1 <= i0;  // last key ≤ first query
  return !(full && causal_ok && last_query_sees_first_key);
}

// Copies lse and delta of rows [t0, t0 + n) of one (batch, head) (offset `base`); rows ≥ n get 0.
__device__ inline void load_row_stats(float* lse_s, float* delta_s, int rows, const float* lse, const float* delta,
                                      int64_t base, int64_t n) {
  for (int r = threadIdx.x; r < rows; r += blockDim.x) {
    lse_s[r] = r < n ? lse[base + r] : 0.0f;
    delta_s[r] = r < n ? delta[base + r] : 0.0f;
  }
}

// ---- Host side ----------------------------------------------------------------------------------------------

// Raises a kernel's dynamic shared-memory limit (above the 48 KB default) and asks for the largest shared-memory
// carveout so that two blocks fit on an SM. Called once per kernel instantiation (function-local statics
// below): replica drives one GPU per process.
template <typename Kernel>
size_t prepare_kernel(Kernel kernel, size_t bytes, const char* name) {
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)), name);
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  int(cudaSharedmemCarveoutMaxShared)),
             name);
  return bytes;
}

// Calls f(std::integral_constant<int, D>) for head dim D, one of the set Ds.
template <int... Ds, typename F>
void with_head_dim(HeadDims<Ds...>, int64_t D, F&& f) {
  const bool called = ((D == Ds && (f(std::integral_constant<int, Ds>{}), true)) || ...);
  if (!called) throw std::logic_error("attention bf16: unreachable head dim");  // check_shape rejects the rest
}

inline void check_aligned(const void* p, const char* name) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    throw std::invalid_argument(std::string("attention bf16: ") + name +
                                " must be 16-byte aligned (float4 loads, 16-byte cp.async of its bf16 copy)");
}

inline void check_shape(const AttentionShape& s) {
  if (!MmaHeadDims::has(s.D))
    throw std::invalid_argument("attention bf16: head dim D must be one of " + MmaHeadDims::list() +
                                " (tensor-core tiles), got D = " + std::to_string(s.D) +
                                "; use attention_forward (fp32)");
  if (s.K <= 0 || s.H % s.K != 0)
    throw std::invalid_argument("attention bf16: query heads must be a multiple of KV heads");
}

// The checks every tensor-core launch makes (shape, then the float4 alignment of `arrays`); false when there
// is nothing to compute.
inline bool check_inputs(const AttentionShape& s, std::initializer_list<std::pair<WeightRef, const char*>> arrays) {
  check_shape(s);
  if (s.B * s.T * s.H == 0) return false;
  for (const auto& [p, name] : arrays) {
    check_aligned(p.f32, name);
    if (p.b16) check_aligned(p.b16, name);
  }
  return true;
}

inline float softmax_scale(const AttentionShape& s) { return 1.0f / std::sqrt(float(s.D)); }

// The block shape of the tensor-core kernels: 4 warps of 16 rows.
constexpr int kThreads = 128;
constexpr int kBlockRows = 64;  // queries per forward and dQ block, keys per dK/dV block

}  // namespace replica::cuda::attention_tiles
