// The emulator's own contract (README.md): CUDA's execution model where kernels rely on it, and a clear
// failure where a kernel breaks a rule that the hardware leaves undefined.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mma.h>

#include "replica/kernels/cuda/bulk_copy.cuh"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace {

template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(size_t n) { EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
};

template <typename... Params, typename... Args>
cudaError_t run(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, Args... args) {
  const cudaError_t status = cuda_emu::launch(reinterpret_cast<const void*>(kernel), grid, block, smem,
                                              [&] { kernel(args...); });
  cudaGetLastError();  // launch() leaves its error for cudaGetLastError, as the runtime does: clear it
  return status;
}

__global__ void block_reduce(const float* x, float* out) {
  __shared__ float partial[32];
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0;
    for (unsigned w = 0; w < blockDim.x / 32; w++) sum += partial[w];
    out[blockIdx.x] = sum;
  }
}

TEST(CudaEmulator, ShufflesAndBarriersReduceEveryBlock) {
  const int blocks = 3, threads = 256;
  std::vector<float> host(blocks * threads);
  std::iota(host.begin(), host.end(), 0.0f);
  DeviceBuffer<float> x(host.size()), out(blocks);
  cudaMemcpy(x.p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  ASSERT_EQ(run(block_reduce, blocks, threads, 0, x.p, out.p), cudaSuccess);
  std::vector<float> sums(blocks);
  cudaMemcpy(sums.data(), out.p, blocks * sizeof(float), cudaMemcpyDeviceToHost);
  for (int b = 0; b < blocks; b++) {
    const double n0 = b * threads, n1 = n0 + threads - 1;
    EXPECT_EQ(sums[b], float((n0 + n1) * threads / 2)) << "block " << b;
  }
}

__global__ void shuffle_patterns(int* out) {
  const int lane = int(threadIdx.x);
  out[lane] = __shfl_sync(0xffffffffu, lane * 10, 3);            // broadcast from lane 3
  out[32 + lane] = __shfl_down_sync(0xffffffffu, lane, 5);       // lanes ≥ 27 keep their own value
  out[64 + lane] = __shfl_xor_sync(0xffffffffu, lane, 1);
}

TEST(CudaEmulator, ShuffleSourcesFollowCuda) {
  DeviceBuffer<int> out(96);
  ASSERT_EQ(run(shuffle_patterns, 1, 32, 0, out.p), cudaSuccess);
  std::vector<int> got(96);
  cudaMemcpy(got.data(), out.p, got.size() * sizeof(int), cudaMemcpyDeviceToHost);
  for (int lane = 0; lane < 32; lane++) {
    EXPECT_EQ(got[lane], 30);
    EXPECT_EQ(got[32 + lane], lane + 5 < 32 ? lane + 5 : lane);
    EXPECT_EQ(got[64 + lane], lane ^ 1);
  }
}

// Half of each warp waits at the block barrier, the other half at a warp barrier that needs the first half.
__global__ void barriers_crossed(float*) {
  if (threadIdx.x % 32 < 16)
    __syncthreads();
  else
    __syncwarp();
}

__global__ void shuffle_in_half_warp(float* out) {
  if (threadIdx.x % 32 < 16) out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

TEST(CudaEmulator, BarriersThatCannotAllOpenFailTheLaunch) {
  EXPECT_EQ(run(barriers_crossed, 1, 128, 0, static_cast<float*>(nullptr)), cudaErrorLaunchFailure);
  DeviceBuffer<float> out(64);
  EXPECT_EQ(run(shuffle_in_half_warp, 1, 64, 0, out.p), cudaErrorLaunchFailure);
}

// Every thread writes its slot, then reads its neighbour's: correct only with the barrier in between.
__global__ void neighbour_read(float* out, bool barrier) {
  float* slots = reinterpret_cast<float*>(cuda_emu::dynamic_shared_memory());
  slots[threadIdx.x] = float(threadIdx.x);
  if (barrier) __syncthreads();
  out[threadIdx.x] = slots[(threadIdx.x + 1) % blockDim.x];
}

TEST(CudaEmulator, MissingBarrierReadsPoisonedSharedMemory) {
  const int threads = 64;
  DeviceBuffer<float> out(threads);
  std::vector<float> got(threads);
  ASSERT_EQ(run(neighbour_read, 1, threads, threads * sizeof(float), out.p, true), cudaSuccess);
  cudaMemcpy(got.data(), out.p, threads * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < threads; i++) EXPECT_EQ(got[i], float((i + 1) % threads));
  ASSERT_EQ(run(neighbour_read, 1, threads, threads * sizeof(float), out.p, false), cudaSuccess);
  cudaMemcpy(got.data(), out.p, threads * sizeof(float), cudaMemcpyDeviceToHost);
  // In thread order thread 0 reads before thread 1 writes; in reverse order (CUDA_EMU_ORDER) the last thread
  // reads before thread 0 writes: either way one thread sees the poison.
  EXPECT_TRUE(std::any_of(got.begin(), got.end(), [](float x) { return std::isnan(x); }));
}

using namespace nvcuda;
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// C = A·Bᵀ for 16 × 16 bf16 tiles (B read column-major is Bᵀ), with pointer offsets and strides to break.
__global__ void tile_product(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int offset, unsigned ld) {
  FragA fa;
  FragB fb;
  FragC fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a + offset, ld);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

__global__ void tile_product_one_lane(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int, unsigned) {
  if (threadIdx.x == 0) tile_product(a, b, c, 0, 16);
}

TEST(CudaEmulator, WmmaComputesTheProductAndEnforcesItsRules) {
  std::vector<__nv_bfloat16> a(16 * 24), b(16 * 16);
  for (size_t i = 0; i < a.size(); i++) a[i] = __float2bfloat16_rn(float(int(i % 7) - 3));
  for (size_t i = 0; i < b.size(); i++) b[i] = __float2bfloat16_rn(float(int(i % 5) - 2) * 0.5f);
  DeviceBuffer<__nv_bfloat16> da(a.size()), db(b.size());
  DeviceBuffer<float> dc(256);
  cudaMemcpy(da.p, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db.p, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  ASSERT_EQ(run(tile_product, 1, 32, 0, da.p, db.p, dc.p, 0, 16u), cudaSuccess);
  std::vector<float> c(256);
  cudaMemcpy(c.data(), dc.p, c.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      float want = 0;
      for (int k = 0; k < 16; k++) want += __bfloat162float(a[i * 16 + k]) * __bfloat162float(b[j * 16 + k]);
      EXPECT_EQ(c[i * 16 + j], want) << i << "," << j;
    }
  EXPECT_EQ(run(tile_product, 1, 32, 0, da.p, db.p, dc.p, 8, 16u), cudaErrorLaunchFailure) << "16-byte aligned";
  EXPECT_EQ(run(tile_product, 1, 32, 0, da.p, db.p, dc.p, 0, 20u), cudaErrorLaunchFailure) << "ldm of 40 bytes";
  EXPECT_EQ(run(tile_product_one_lane, 1, 32, 0, da.p, db.p, dc.p, 0, 16u), cudaErrorLaunchFailure)
      << "a wmma operation on one lane";
}

// One m16n8k16 product with the fragments PTX documents (ptx.cc): lane l = 4g + t holds A[g][2t, 2t+1],
// A[g+8][2t, 2t+1], A[g][2t+8, 2t+9], A[g+8][2t+8, 2t+9]; B[2t, 2t+1][g], B[2t+8, 2t+9][g]; D[g][2t, 2t+1],
// D[g+8][2t, 2t+1]. A is row-major [16][16], B is given as Bᵀ [8][16] (column-major B), D row-major [16][8].
__global__ void mma_tile(const __nv_bfloat16* a, const __nv_bfloat16* bt, float* d) {
  const int g = int(threadIdx.x) / 4, t = int(threadIdx.x) % 4;
  const auto pair = [](const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); };
  const uint32_t fa[4] = {pair(a + g * 16 + 2 * t), pair(a + (g + 8) * 16 + 2 * t), pair(a + g * 16 + 2 * t + 8),
                          pair(a + (g + 8) * 16 + 2 * t + 8)};
  const uint32_t fb[2] = {pair(bt + g * 16 + 2 * t), pair(bt + g * 16 + 2 * t + 8)};
  float acc[4] = {1.0f, 1.0f, 1.0f, 1.0f};  // C = 1
  cuda_emu::mma_m16n8k16_bf16(acc, fa, fb);
  d[g * 8 + 2 * t] = acc[0];
  d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2];
  d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

TEST(CudaEmulator, MmaSyncComputesThePtxFragmentsProduct) {
  std::vector<__nv_bfloat16> a(256), bt(128);
  for (size_t i = 0; i < a.size(); i++) a[i] = __float2bfloat16_rn(float(int(i % 11) - 5) * 0.25f);
  for (size_t i = 0; i < bt.size(); i++) bt[i] = __float2bfloat16_rn(float(int(i % 7) - 3));
  DeviceBuffer<__nv_bfloat16> da(a.size()), db(bt.size());
  DeviceBuffer<float> dd(128);
  cudaMemcpy(da.p, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db.p, bt.data(), bt.size() * 2, cudaMemcpyHostToDevice);
  ASSERT_EQ(run(mma_tile, 1, 32, 0, da.p, db.p, dd.p), cudaSuccess);
  std::vector<float> d(128);
  cudaMemcpy(d.data(), dd.p, d.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) {
      float want = 1.0f;
      for (int k = 0; k < 16; k++) want += __bfloat162float(a[i * 16 + k]) * __bfloat162float(bt[j * 16 + k]);
      EXPECT_EQ(d[i * 8 + j], want) << i << "," << j;
    }
}

// One m64n64k16 warpgroup product (ptx.cc): each warp's A fragment holds its 16 rows of a [64][16] A, as for
// mma.sync; B [16][64] is staged in shared memory in core matrices (8 × 8, 128 contiguous bytes), those along K
// 128 bytes apart and those along N 256 bytes apart, K-major (each core-matrix row an n, k contiguous) or
// MN-major (each row a k, n contiguous). In modes 2 and 3, A comes from shared memory too, laid out as B's K-major
// form (2) or its MN-major form (3: each row a k, A's rows m contiguous). D is written row-major [64][64], on top of
// C = 1. mode: 0 K-major B, 1 MN-major B, 2 A and B from shared memory, K-major, 3 both MN-major (the backward's
// dQ = dS·K). Each thread also writes, after D, its first accumulator as read before the wait.
__global__ void wgmma_tile(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d, int mode) {
  auto* smem = reinterpret_cast<__nv_bfloat16*>(cuda_emu::dynamic_shared_memory());
  const int thread = int(threadIdx.x), warp = thread / 32, g = thread % 32 / 4, t = thread % 4;
  const bool transpose = mode == 1 || mode == 3, transpose_a = mode == 3;
  for (int e = thread; e < 16 * 64; e += 128) {
    const int k = e / 64, n = e % 64, m = e / 16, ka = e % 16;
    const int inside = transpose ? (k % 8) * 8 + n % 8 : (n % 8) * 8 + k % 8;
    smem[(k / 8) * 64 + (n / 8) * 128 + inside] = b[e];
    const int inside_a = transpose_a ? (ka % 8) * 8 + m % 8 : (m % 8) * 8 + ka % 8;
    smem[1024 + (ka / 8) * 64 + (m / 8) * 128 + inside_a] = a[e];  // A [64][16]
  }
  __syncthreads();
  const __nv_bfloat16* rows = a + warp * 16 * 16;
  const auto pair = [](const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); };
  const uint32_t fa[4] = {pair(rows + g * 16 + 2 * t), pair(rows + (g + 8) * 16 + 2 * t),
                          pair(rows + g * 16 + 2 * t + 8), pair(rows + (g + 8) * 16 + 2 * t + 8)};
  float acc[32];
  for (float& x : acc) x = 1.0f;
  const uint64_t descriptor = uint64_t(128 >> 4) << 16 | uint64_t(256 >> 4) << 32;  // B at offset 0
  if (mode >= 2) {
    cuda_emu::wgmma_m64n64k16_bf16_ss(acc, descriptor | (2048 >> 4), descriptor, transpose_a, transpose, true);
  } else {
    cuda_emu::wgmma_m64n64k16_bf16(acc, fa, descriptor, transpose, true);
  }
  d[64 * 64 + thread] = acc[0];  // before the wait: the product is still in flight
  cuda_emu::wgmma_commit();
  cuda_emu::wgmma_wait(0);
  for (int j = 0; j < 8; j++)
    for (int e = 0; e < 4; e++) d[(warp * 16 + g + 8 * (e / 2)) * 64 + 8 * j + 2 * t + e % 2] = acc[4 * j + e];
}

// A product that is never waited for fails the launch, as its result would be lost on a GPU.
__global__ void wgmma_unwaited(float* d) {
  const uint32_t a[4] = {0, 0, 0, 0};
  float acc[32] = {};
  cuda_emu::wgmma_m64n64k16_bf16(acc, a, uint64_t(128 >> 4) << 16 | uint64_t(256 >> 4) << 32, false, false);
  d[threadIdx.x] = 0.0f;
}

TEST(CudaEmulator, WgmmaComputesTheWarpgroupProductFromADescriptor) {
  std::vector<__nv_bfloat16> a(64 * 16), b(16 * 64);
  for (size_t i = 0; i < a.size(); i++) a[i] = __float2bfloat16_rn(float(int(i % 13) - 6) * 0.25f);
  for (size_t i = 0; i < b.size(); i++) b[i] = __float2bfloat16_rn(float(int(i % 7) - 3));
  DeviceBuffer<__nv_bfloat16> da(a.size()), db(b.size());
  DeviceBuffer<float> dd(64 * 64 + 128);
  cudaMemcpy(da.p, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db.p, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  for (int mode = 0; mode < 4; mode++) {
    ASSERT_EQ(run(wgmma_tile, 1, 128, 2 * 16 * 64 * 2, da.p, db.p, dd.p, mode), cudaSuccess);
    std::vector<float> d(64 * 64 + 128);
    cudaMemcpy(d.data(), dd.p, d.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (int thread = 0; thread < 128; thread++) ASSERT_TRUE(std::isnan(d[64 * 64 + thread])) << "read before the wait";
    for (int i = 0; i < 64; i++)
      for (int j = 0; j < 64; j++) {
        float want = 1.0f;
        for (int k = 0; k < 16; k++) want += __bfloat162float(a[i * 16 + k]) * __bfloat162float(b[k * 64 + j]);
        ASSERT_EQ(d[i * 64 + j], want) << i << "," << j << ", mode " << mode;
      }
  }
  EXPECT_EQ(run(wgmma_unwaited, 1, 128, 16 * 64 * 2, dd.p), cudaErrorLaunchFailure);
}

// A wgmma whose descriptor reaches past the end of shared memory fails the launch. Core matrices lie 128 bytes apart
// along K and 256 along M or N, as in wgmma_tile, so element [15][63], the last that an operand's descriptor gives,
// ends at byte 2047 + 16·shift of the 2048 when `shift` 16-byte units are added to the operand's start address.
// operand: 0 B (A in registers), 1 B and 2 A, both from shared memory.
__global__ void wgmma_shifted(int operand, int shift, int transpose) {
  const uint64_t layout = uint64_t(128 >> 4) << 16 | uint64_t(256 >> 4) << 32;
  const uint64_t a = layout | uint64_t(operand == 2 ? shift : 0), b = layout | uint64_t(operand != 2 ? shift : 0);
  const uint32_t fa[4] = {0, 0, 0, 0};
  float acc[32] = {};
  if (operand == 0) {
    cuda_emu::wgmma_m64n64k16_bf16(acc, fa, b, transpose, false);
  } else {
    cuda_emu::wgmma_m64n64k16_bf16_ss(acc, a, b, transpose, transpose, false);
  }
  cuda_emu::wgmma_commit();
  cuda_emu::wgmma_wait(0);
}

TEST(CudaEmulator, WgmmaReadsPastSharedMemoryFailTheLaunch) {
  for (int operand = 0; operand < 3; operand++)
    for (int transpose = 0; transpose < 2; transpose++) {
      EXPECT_EQ(run(wgmma_shifted, 1, 128, 2048, operand, 0, transpose), cudaSuccess)
          << "operand " << operand << ", transpose " << transpose << ": the last element ends at the last byte";
      EXPECT_EQ(run(wgmma_shifted, 1, 128, 2048, operand, 1, transpose), cudaErrorLaunchFailure)
          << "operand " << operand << ", transpose " << transpose << ": 16 bytes past the end";
    }
}

// A 16 × 16 tile of bf16 bit patterns (element [i][j] = 16i + j) staged in shared memory with a padded row
// stride, then loaded by ldmatrix.x4 with the addresses of an A fragment: lane l names row l % 8 + 8·(m % 2),
// column 8·(m / 2) of matrix m = l / 8. `offset` shifts every address (by elements).
__global__ void ldmatrix_tile(const uint16_t* tile, uint32_t* out, int transpose, int offset) {
  constexpr int ld = 24;  // 48-byte rows keep every row 16-byte aligned
  auto* smem = reinterpret_cast<uint16_t*>(cuda_emu::dynamic_shared_memory());
  const int lane = int(threadIdx.x), m = lane / 8, r = lane % 8;
  for (int e = lane; e < 256; e += 32) smem[(e / 16) * ld + e % 16] = tile[e];
  __syncwarp();
  uint32_t regs[4];
  cuda_emu::ldmatrix_x4(regs, smem + (r + 8 * (m % 2)) * ld + 8 * (m / 2) + offset, transpose != 0);
  for (int i = 0; i < 4; i++) out[lane * 4 + i] = regs[i];
}

TEST(CudaEmulator, LdmatrixGivesThePtxFragments) {
  std::vector<uint16_t> tile(256);
  std::iota(tile.begin(), tile.end(), uint16_t(0));
  DeviceBuffer<uint16_t> d_tile(tile.size());
  DeviceBuffer<uint32_t> d_out(128);
  cudaMemcpy(d_tile.p, tile.data(), tile.size() * 2, cudaMemcpyHostToDevice);
  auto element = [](int i, int j) { return uint32_t(16 * i + j); };
  for (int transpose = 0; transpose < 2; transpose++) {
    ASSERT_EQ(run(ldmatrix_tile, 1, 32, 16 * 48, d_tile.p, d_out.p, transpose, 0), cudaSuccess);
    std::vector<uint32_t> out(128);
    cudaMemcpy(out.data(), d_out.p, out.size() * 4, cudaMemcpyDeviceToHost);
    for (int lane = 0; lane < 32; lane++)
      for (int m = 0; m < 4; m++) {
        const int g = lane / 4, t = lane % 4, i0 = 8 * (m % 2), j0 = 8 * (m / 2);
        const uint32_t want = transpose ? element(i0 + 2 * t, j0 + g) | element(i0 + 2 * t + 1, j0 + g) << 16
                                        : element(i0 + g, j0 + 2 * t) | element(i0 + g, j0 + 2 * t + 1) << 16;
        EXPECT_EQ(out[size_t(lane * 4 + m)], want) << "lane " << lane << ", matrix " << m << ", trans " << transpose;
      }
  }
  EXPECT_EQ(run(ldmatrix_tile, 1, 32, 16 * 48, d_tile.p, d_out.p, 0, 1), cudaErrorLaunchFailure)
      << "rows must be 16-byte aligned";
}

// cp.async: the copies of a group land when their thread waits for the group, not before.
__global__ void async_copies(const float* src, float* out) {
  float* smem = reinterpret_cast<float*>(cuda_emu::dynamic_shared_memory());
  for (int i = 0; i < 8; i++) smem[i] = -1.0f;
  cuda_emu::async_copy(smem, src, 16);
  cuda_emu::async_commit();
  cuda_emu::async_copy(smem + 4, src + 4, 16);
  cuda_emu::async_commit();
  out[0] = smem[0];
  cuda_emu::async_wait(1);  // the first group has landed, the second may still be in flight
  out[1] = smem[0];
  out[2] = smem[4];
  cuda_emu::async_wait(0);
  out[3] = smem[4];
}

__global__ void async_copy_to_global(const float* src, float* out) {
  cuda_emu::async_copy(out, src, 16);
  cuda_emu::async_commit();
  cuda_emu::async_wait(0);
}

TEST(CudaEmulator, AsyncCopiesLandAtTheirWait) {
  const std::vector<float> host = {10, 11, 12, 13, 14, 15, 16, 17};
  DeviceBuffer<float> src(8), out(8);
  cudaMemcpy(src.p, host.data(), 32, cudaMemcpyHostToDevice);
  ASSERT_EQ(run(async_copies, 1, 1, 32, src.p, out.p), cudaSuccess);
  std::vector<float> got(4);
  cudaMemcpy(got.data(), out.p, 16, cudaMemcpyDeviceToHost);
  EXPECT_EQ(got, (std::vector<float>{-1, 10, -1, 14}));
  EXPECT_EQ(run(async_copy_to_global, 1, 1, 0, src.p, out.p), cudaErrorLaunchFailure)
      << "cp.async writes shared memory only";
}

// mbarrier phases (PTX ISA): a fresh barrier is in phase 0, whose preceding phase (parity 1) counts as complete; a
// phase completes when its expected arrivals have all arrived and its transaction count is zero.
__global__ void mbarrier_phases(int* out) {
  auto* bar = reinterpret_cast<uint64_t*>(cuda_emu::dynamic_shared_memory());
  replica::cuda::mbarrier_init(bar, 2);
  int* o = out;
  *o++ = cuda_emu::mbarrier_test_wait_parity(bar, 1);  // 1: the phase before phase 0
  *o++ = cuda_emu::mbarrier_test_wait_parity(bar, 0);  // 0: phase 0 runs
  *o++ = int(cuda_emu::mbarrier_arrive(bar));          // 0: the state token is the phase arrived on
  *o++ = cuda_emu::mbarrier_test_wait_parity(bar, 0);  // 0: one arrival of two
  *o++ = int(cuda_emu::mbarrier_arrive(bar));          // 0, and phase 0 completes
  *o++ = cuda_emu::mbarrier_test_wait_parity(bar, 0);  // 1
  *o++ = cuda_emu::mbarrier_test_wait_parity(bar, 1);  // 0: phase 1 runs, with its count reset to 2
  cuda_emu::mbarrier_arrive(bar, 2);
  *o++ = cuda_emu::mbarrier_test_wait_parity(bar, 1);  // 1
  // The transaction count holds a phase whose arrivals are all in: expect 48 bytes, then 16 + 32 complete.
  cuda_emu::mbarrier_arrive_expect_tx(bar, 48);
  cuda_emu::mbarrier_arrive(bar);
  *o++ = cuda_emu::mbarrier_test_wait_parity(bar, 0);  // 0: 48 bytes outstanding
}

__global__ void mbarrier_copies(const float* src, float* out, int mode) {
  unsigned char* smem = cuda_emu::dynamic_shared_memory();
  auto* bar = reinterpret_cast<uint64_t*>(smem);
  float* data = reinterpret_cast<float*>(smem + 128);
  replica::cuda::mbarrier_init(bar, 1);
  replica::cuda::mbarrier_arrive_expect_tx(bar, 48);
  replica::cuda::bulk_copy(data, src, 16, bar);
  if (mode == 1) return;  // exits with a copy in flight
  replica::cuda::bulk_copy(data + 4, src + 4, 32, bar);
  out[0] = cuda_emu::mbarrier_test_wait_parity(bar, 0);  // 0: issued, not landed
  out[1] = data[0];                                      // NaN: read before the wait
  replica::cuda::mbarrier_wait(bar, 0);                  // the only thread: the copies land
  for (int i = 0; i < 12; i++) out[2 + i] = data[i];
  if (mode == 2) {  // a copy into the buffer just read, with no wait: its old contents are gone at once
    replica::cuda::mbarrier_arrive_expect_tx(bar, 16);
    replica::cuda::bulk_copy(data, src + 8, 16, bar);
    out[14] = data[0];
    replica::cuda::mbarrier_wait(bar, 1);
    out[15] = data[0];
  }
}

// A ring of two slots between a producer warp (warp 1) and a consumer warp (warp 0): the producer waits for a slot
// to be empty, copies a tile of 32 floats into it (lanes 0-7, 16 bytes each),
// the consumer waits for it to be full, sums it into out[tile], and releases it. Six tiles, so each slot has three
// phases on each barrier. `skip_empty`: the producer refills without waiting for the consumer (a race the poisoned
// destination shows).
__global__ void mbarrier_ring(const float* src, float* out, int tiles, int skip_empty) {
  unsigned char* smem = cuda_emu::dynamic_shared_memory();
  auto* full = reinterpret_cast<uint64_t*>(smem);
  auto* empty = full + 2;
  float* slots = reinterpret_cast<float*>(smem + 128);
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  if (threadIdx.x == 0)
    for (int s = 0; s < 2; s++) {
      replica::cuda::mbarrier_init(&full[s], 8);    // the producer's lanes 0-7 arrive with their bytes
      replica::cuda::mbarrier_init(&empty[s], 32);  // every consumer lane releases
    }
  replica::cuda::fence_mbarrier_init();
  __syncthreads();
  for (int t = 0; t < tiles; t++) {
    const int s = t % 2;
    const uint32_t use = uint32_t(t / 2);
    if (warp == 1) {
      if (!skip_empty) replica::cuda::mbarrier_wait(&empty[s], (use & 1) ^ 1);
      if (lane < 8) {
        replica::cuda::mbarrier_arrive_expect_tx(&full[s], 16);
        replica::cuda::bulk_copy(slots + 32 * s + 4 * lane, src + 32 * t + 4 * lane, 16, &full[s]);
      }
    } else {
      replica::cuda::mbarrier_wait(&full[s], use & 1);
      float x = slots[32 * s + lane];
      for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
      if (lane == 0) out[t] = x;
      replica::cuda::mbarrier_arrive(&empty[s]);
    }
  }
}

__global__ void mbarrier_misuse(int mode) {
  auto* bar = reinterpret_cast<uint64_t*>(cuda_emu::dynamic_shared_memory());
  if (mode == 0) replica::cuda::mbarrier_arrive(bar);  // never initialised
  if (threadIdx.x == 0) replica::cuda::mbarrier_init(bar, 1);
  __syncthreads();
  if (mode == 1 && threadIdx.x == 0) cuda_emu::mbarrier_arrive(bar, 2);  // more arrivals than the phase expects
  if (mode == 2) replica::cuda::mbarrier_wait(bar, 0);  // nobody arrives: a deadlock, not a hang
  if (mode == 3) cuda_emu::bulk_copy(bar + 2, bar + 4, 16, bar);  // from shared memory
  if (mode == 4) cuda_emu::setmaxnreg(20);
}

TEST(CudaEmulator, MbarrierPhasesFollowThePtxIsa) {
  DeviceBuffer<int> out(16);
  ASSERT_EQ(run(mbarrier_phases, 1, 1, 64, out.p), cudaSuccess);
  std::vector<int> got(9);
  cudaMemcpy(got.data(), out.p, got.size() * sizeof(int), cudaMemcpyDeviceToHost);
  EXPECT_EQ(got, (std::vector<int>{1, 0, 0, 0, 0, 1, 0, 1, 0}));
}

TEST(CudaEmulator, BulkCopiesCompleteTransactionsWhenTheyLand) {
  std::vector<float> host(16);
  std::iota(host.begin(), host.end(), 100.0f);
  DeviceBuffer<float> src(16), out(16);
  cudaMemcpy(src.p, host.data(), 64, cudaMemcpyHostToDevice);
  ASSERT_EQ(run(mbarrier_copies, 1, 1, 256, src.p, out.p, 2), cudaSuccess);
  std::vector<float> got(16);
  cudaMemcpy(got.data(), out.p, 64, cudaMemcpyDeviceToHost);
  EXPECT_EQ(got[0], 0.0f) << "the phase waits for 48 bytes";
  EXPECT_TRUE(std::isnan(got[1])) << "the destination before its copy lands";
  for (int i = 0; i < 12; i++) EXPECT_EQ(got[2 + i], host[i]) << i;
  EXPECT_TRUE(std::isnan(got[14])) << "a copy in flight overwrites what was there";
  EXPECT_EQ(got[15], host[8]);
  EXPECT_EQ(run(mbarrier_copies, 1, 1, 256, src.p, out.p, 1), cudaErrorLaunchFailure)
      << "a block that ends with a copy in flight";
}

TEST(CudaEmulator, MbarrierWaitsBlockUntilTheProducerFillsTheSlot) {
  const int tiles = 6;
  std::vector<float> host(32 * tiles);
  std::iota(host.begin(), host.end(), 1.0f);
  DeviceBuffer<float> src(host.size()), out(tiles);
  cudaMemcpy(src.p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  ASSERT_EQ(run(mbarrier_ring, 1, 64, 512, src.p, out.p, tiles, 0), cudaSuccess);
  std::vector<float> got(tiles);
  cudaMemcpy(got.data(), out.p, tiles * sizeof(float), cudaMemcpyDeviceToHost);
  for (int t = 0; t < tiles; t++) EXPECT_EQ(got[t], float(32 * (64 * t + 33) / 2)) << "tile " << t;
  // Without the empty barriers the producer overwrites slots the consumer has not read, or arrives more often
  // than a phase expects: the sums, or the launch, fail (which, depends on the thread order).
  const cudaError_t status = run(mbarrier_ring, 1, 64, 512, src.p, out.p, tiles, 1);
  if (status == cudaSuccess) {
    cudaMemcpy(got.data(), out.p, tiles * sizeof(float), cudaMemcpyDeviceToHost);
    bool all_right = true;
    for (int t = 0; t < tiles; t++) all_right &= got[t] == float(32 * (64 * t + 33) / 2);
    EXPECT_FALSE(all_right) << "a refill without waiting for the slot to be empty";
  }
}

TEST(CudaEmulator, MbarrierMisuseFailsTheLaunch) {
  EXPECT_EQ(run(mbarrier_misuse, 1, 32, 64, 0), cudaErrorLaunchFailure) << "an uninitialised barrier";
  EXPECT_EQ(run(mbarrier_misuse, 1, 32, 64, 1), cudaErrorLaunchFailure) << "more arrivals than expected";
  EXPECT_EQ(run(mbarrier_misuse, 1, 32, 64, 2), cudaErrorLaunchFailure) << "a phase that never completes";
  EXPECT_EQ(run(mbarrier_misuse, 1, 32, 64, 3), cudaErrorLaunchFailure) << "a bulk copy from shared memory";
  EXPECT_EQ(run(mbarrier_misuse, 1, 32, 64, 4), cudaErrorLaunchFailure) << "setmaxnreg below 24";
  EXPECT_EQ(run(mbarrier_misuse, 1, 32, 64, 5), cudaSuccess);
}

// Turns at an ordered sum (kernels/cuda/turns.cuh): block x adds when turn x + offset comes, then passes it on.
// Blocks run in launch order here, so with offset 0 each finds its turn come; with offset 1 block 0 waits for a
// turn that only a later block could pass, and the launch fails.
__global__ void ordered_adds(int* counter, float* sum, int offset) {
  if (threadIdx.x == 0) cuda_emu::wait_for_turn(counter, int(blockIdx.x) + offset);
  __syncthreads();
  if (threadIdx.x == 0) {
    *sum = *sum * 2.0f + float(blockIdx.x);
    *counter = int(blockIdx.x) + offset + 1;
  }
}

TEST(CudaEmulator, TurnsMustFollowTheLaunchOrder) {
  DeviceBuffer<int> counter(1);
  DeviceBuffer<float> sum(1);
  const int zero = 0;
  const float no_sum = 0.0f;
  cudaMemcpy(counter.p, &zero, sizeof zero, cudaMemcpyHostToDevice);
  cudaMemcpy(sum.p, &no_sum, sizeof no_sum, cudaMemcpyHostToDevice);
  ASSERT_EQ(run(ordered_adds, 4, 32, 0, counter.p, sum.p, 0), cudaSuccess);
  float got = 0.0f;
  cudaMemcpy(&got, sum.p, sizeof got, cudaMemcpyDeviceToHost);
  EXPECT_EQ(got, ((0.0f * 2 + 1) * 2 + 2) * 2 + 3) << "the adds in block order";
  cudaMemcpy(counter.p, &zero, sizeof zero, cudaMemcpyHostToDevice);
  EXPECT_EQ(run(ordered_adds, 4, 32, 0, counter.p, sum.p, 1), cudaErrorLaunchFailure) << "a turn no earlier block passes";
}

__global__ void touch_shared(float* out) { out[0] = float(cuda_emu::dynamic_shared_memory()[0]); }

TEST(CudaEmulator, LaunchLimitsFollowHopper) {
  DeviceBuffer<float> out(1);
  EXPECT_EQ(run(touch_shared, 1, 2048, 0, out.p), cudaErrorInvalidConfiguration);
  EXPECT_EQ(run(touch_shared, dim3(1, 70000), 32, 0, out.p), cudaErrorInvalidConfiguration);
  EXPECT_EQ(run(touch_shared, 1, 32, 64 << 10, out.p), cudaErrorInvalidValue) << "over 48 KB needs the attribute";
  EXPECT_EQ(cudaFuncSetAttribute(touch_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10), cudaSuccess);
  EXPECT_EQ(run(touch_shared, 1, 32, 64 << 10, out.p), cudaSuccess);
  EXPECT_EQ(cudaFuncSetAttribute(touch_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 << 10),
            cudaErrorInvalidValue);
}

__global__ void write_at(float* p, int i) { p[i] = 1.0f; }

TEST(CudaEmulatorDeathTest, KernelAccessPastABufferFaults) {
  DeviceBuffer<float> buffer(64);  // 256 bytes: no rounding slack
  ASSERT_EQ(run(write_at, 1, 1, 0, buffer.p, 63), cudaSuccess);
  EXPECT_DEATH(run(write_at, 1, 1, 0, buffer.p, 64), "");
}

__global__ void touch_shared_at(float*, int i) { cuda_emu::dynamic_shared_memory()[i] = 1; }

TEST(CudaEmulatorDeathTest, KernelAccessPastItsSharedMemoryFaults) {
  ASSERT_EQ(run(touch_shared_at, 1, 1, 1024, static_cast<float*>(nullptr), 1023), cudaSuccess);
  EXPECT_DEATH(run(touch_shared_at, 1, 1, 1024, static_cast<float*>(nullptr), 1024), "");
}

TEST(CudaEmulator, CopiesMustMatchWhereTheirPointersLive) {
  DeviceBuffer<float> device(4);
  std::vector<float> host(4, 1.0f);
  EXPECT_EQ(cudaMemcpy(device.p, host.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), device.p, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(device.p, host.data(), 20, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "overruns";
  EXPECT_EQ(cudaMemsetAsync(host.data(), 0, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(host.data()), cudaErrorInvalidValue);
}

// A copy between device memory and page-locked host memory waits in its stream until something orders it: the
// stream's next operation, a wait for an event recorded after it, or a synchronization. Pageable copies do not wait.
TEST(CudaEmulator, PageLockedCopiesLandWhenTheStreamOrderSaysSo) {
  DeviceBuffer<float> device(4);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 16), cudaSuccess);
  cudaStream_t copies, other;
  cudaEvent_t copied;
  ASSERT_EQ(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&copied), cudaSuccess);
  const std::vector<float> ones(4, 1.0f), twos(4, 2.0f);
  std::vector<float> got(4);
  auto device_values = [&] {
    EXPECT_EQ(cudaMemcpy(got.data(), device.p, 16, cudaMemcpyDeviceToHost), cudaSuccess);
    return got;
  };
  ASSERT_EQ(cudaMemcpy(device.p, ones.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
  std::copy(twos.begin(), twos.end(), pinned);
  ASSERT_EQ(cudaMemcpyAsync(device.p, pinned, 16, cudaMemcpyHostToDevice, copies), cudaSuccess);
  EXPECT_EQ(device_values(), ones) << "not ordered yet";
  ASSERT_EQ(cudaEventRecord(copied, copies), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(other, copied), cudaSuccess);
  EXPECT_EQ(device_values(), twos) << "a stream waited for the event recorded after it";
  // Out to page-locked memory: there once the stream is synchronized.
  std::fill(pinned, pinned + 4, 0.0f);
  ASSERT_EQ(cudaMemcpyAsync(pinned, device.p, 16, cudaMemcpyDeviceToHost, copies), cudaSuccess);
  EXPECT_EQ(std::vector<float>(pinned, pinned + 4), std::vector<float>(4, 0.0f));
  ASSERT_EQ(cudaStreamSynchronize(copies), cudaSuccess);
  EXPECT_EQ(std::vector<float>(pinned, pinned + 4), twos);
  // Pageable host memory: the copy is done when the call returns.
  ASSERT_EQ(cudaMemcpyAsync(device.p, ones.data(), 16, cudaMemcpyHostToDevice, copies), cudaSuccess);
  EXPECT_EQ(device_values(), ones);
  cudaEventDestroy(copied);
  cudaStreamDestroy(copies);
  cudaStreamDestroy(other);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

}  // namespace
