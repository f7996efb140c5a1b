// cuBLASLt GEMMs. cuBLASLt is column-major, so a row-major product C = op(A)·op(B) is computed as the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap places and each keeps its own transpose flag.
// Determinism: cuBLASLt gives the same bits for the same algorithm, shape and GPU, and the algorithm is
// chosen once per shape and reused (Context::gemm_algorithms).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/cublaslt.h"
#include "replica/kernels/cuda/float8.h"
#include "replica/kernels/cuda/gemm.h"

namespace replica::cuda {

namespace {

// Four values per thread: a 16-byte load and an 8-byte store (one value per thread issued a 2-byte store per
// 4-byte load, and ran at about half the memory speed; docs/gpu.md). Runs where src is 16-byte and dst 8-byte
// aligned; the last n % 4 values, and misaligned operands, take one value per thread.
struct alignas(8) Bf16x4 {
  uint16_t bits[4];
};

__global__ void convert_to_bf16_x4_kernel(const float4* src, Bf16x4* dst, int64_t quads) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < quads; i += int64_t(gridDim.x) * blockDim.x) {
    const float4 v = src[i];
    dst[i] = Bf16x4{{to_bf16_bits(v.x), to_bf16_bits(v.y), to_bf16_bits(v.z), to_bf16_bits(v.w)}};
  }
}

__global__ void convert_to_bf16_kernel(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = to_bf16_bits(src[i]);
}

// Elements spanned by a row-major operand with logical shape [rows, cols] (before its transpose) and stride ld.
int64_t span(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols; }

// The largest power of two (at most 256) that divides p's address: cuBLASLt's heuristic assumes 256-byte
// aligned operands unless told otherwise, and weights in the flat buffer are only 64-byte aligned.
uint32_t alignment(const void* p) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// Column-major layout of an operand stored row-major as [rows, cols] with stride ld: cols × rows, ld.
struct Layout {
  cublasLtMatrixLayout_t desc = nullptr;
  Layout(cudaDataType type, int64_t rows, int64_t cols, int64_t ld) {
    check_cublas(cublaslt().matrix_layout_create(&desc, type, uint64_t(cols), uint64_t(rows), ld), "layout");
  }
  ~Layout() { cublaslt().matrix_layout_destroy(desc); }
};

// The operation and heuristic-preference descriptors, destroyed however the call ends.
struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  MatmulDesc() { check_cublas(cublaslt().matmul_desc_create(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc"); }
  ~MatmulDesc() { cublaslt().matmul_desc_destroy(desc); }
};
struct Preference {
  cublasLtMatmulPreference_t desc = nullptr;
  Preference() { check_cublas(cublaslt().matmul_preference_create(&desc), "preference"); }
  ~Preference() { cublaslt().matmul_preference_destroy(desc); }
};

// The operands' types and, for float8, their scales (device pointers) and whether accumulation may be fast.
struct Operands {
  cudaDataType a_type, b_type;
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  bool fast_accumulation = false;
  uint32_t key() const { return uint32_t(a_type) | uint32_t(b_type) << 8 | uint32_t(fast_accumulation) << 16; }
};

void matmul(Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda,
            const void* B, int64_t ldb, float* C, int64_t ldc, bool accumulate, const Operands& in) {
  // Stored shapes (row-major): A is [M,K] or [K,M] (trans_a), B is [K,N] or [N,K] (trans_b), C is [M,N].
  // cuBLASLt's "A" is our B and its "B" is our A.
  const CublasLt& lt = cublaslt();
  Layout b_layout(in.b_type, trans_b ? N : K, trans_b ? K : N, ldb);
  Layout a_layout(in.a_type, trans_a ? K : M, trans_a ? M : K, lda);
  Layout c_layout(CUDA_R_32F, M, N, ldc);
  MatmulDesc operation;
  cublasLtMatmulDesc_t op = operation.desc;
  const cublasOperation_t op_first = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublas(lt.matmul_desc_set_attribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)), "transa");
  check_cublas(lt.matmul_desc_set_attribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)), "transb");
  if (in.a_scale) {  // float8: cuBLASLt's A is our B
    check_cublas(lt.matmul_desc_set_attribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &in.b_scale,
                                              sizeof(in.b_scale)),
                 "A scale");
    check_cublas(lt.matmul_desc_set_attribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &in.a_scale,
                                              sizeof(in.a_scale)),
                 "B scale");
    const int8_t fast = in.fast_accumulation;
    check_cublas(lt.matmul_desc_set_attribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)),
                 "fast accumulation");
  }

  const uint32_t align_a = alignment(A), align_b = alignment(B), align_c = alignment(C);
  const Context::GemmKey key{trans_a, trans_b, M,       N,       K,      lda, ldb,
                             ldc,     accumulate, in.key(), align_a, align_b, align_c};
  auto it = ctx.gemm_algorithms.find(key);
  if (it == ctx.gemm_algorithms.end()) {
    Preference preference;
    cublasLtMatmulPreference_t pref = preference.desc;
    const uint64_t bytes = ctx.workspace_bytes();
    check_cublas(lt.matmul_preference_set_attribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
                                                    sizeof(bytes)),
                 "workspace preference");
    // cuBLASLt's "A" is our B, and its "B" our A.
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}};
    for (const auto& [attribute, value] : alignments)
      check_cublas(lt.matmul_preference_set_attribute(pref, attribute, &value, sizeof(value)), "alignment preference");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    check_cublas(lt.matmul_algo_get_heuristic(ctx.blas(), op, b_layout.desc, a_layout.desc, c_layout.desc,
                                              c_layout.desc, pref, 1, &result, &found),
                 "heuristic");
    if (found == 0) check_cublas(CUBLAS_STATUS_NOT_SUPPORTED, "heuristic: no algorithm for this GEMM");
    check_cublas(result.state, "heuristic: the algorithm it returned");
    it = ctx.gemm_algorithms.emplace(key, result.algo).first;
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  check_cublas(lt.matmul(ctx.blas(), op, &alpha, B, b_layout.desc, A, a_layout.desc, &beta, C, c_layout.desc, C,
                         c_layout.desc, &it->second, ctx.workspace(), ctx.workspace_bytes(), ctx.stream()),
               "cublasLtMatmul");
}

// out [rows, K16] = the operand's [rows, K] rows (stored [rows, K] with stride ld, or transposed: [K, rows]), K-major,
// columns K … K16 − 1 zero codes (+0 in both formats).
__global__ void pack_k_major_kernel(uint8_t* out, const uint8_t* in, int64_t rows, int64_t K, int64_t ld,
                                    bool transposed, int64_t K16) {
  const int64_t total = rows * K16;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / K16, k = i % K16;
    out[i] = k < K ? in[transposed ? k * ld + r : r * ld + k] : uint8_t(0);
  }
}

cudaDataType float8_type(Float8Format f) { return f == Float8Format::e4m3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

// The operand as cuBLASLt's float8 GEMM takes it: [rows, K] K-major with a leading dimension that is a multiple of
// 16, the codes themselves where they already are, else a copy in `copy`. Returns the codes and sets ld.
const uint8_t* k_major(Context& ctx, const uint8_t* codes, int64_t rows, int64_t K, int64_t ld, bool transposed,
                       std::optional<Scratch<uint8_t>>& copy, int64_t* k_major_ld) {
  if (!transposed && ld % 16 == 0 && K % 16 == 0) {
    *k_major_ld = ld;
    return codes;
  }
  const int64_t K16 = ceil_div(K, 16) * 16;
  copy.emplace(ctx, size_t(rows * K16));
  const int threads = 256;
  const int blocks = int(std::clamp<int64_t>(ceil_div(rows * K16, threads), 1, 8192));
  launch("float8_pack_k_major", pack_k_major_kernel, blocks, threads, 0, ctx.stream(), copy->get(), codes, rows, K,
         ld, transposed, K16);
  *k_major_ld = K16;
  return copy->get();
}

}  // namespace

void gemm_float8(Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const Float8Matrix& A,
                 int64_t lda, const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool accumulate,
                 bool fast_accumulation) {
  if (M == 0 || N == 0) return;
  // As row-major C = A[M,K]·B[N,K]ᵀ: A not transposed, B transposed (cuBLASLt's "TN" after the operands swap).
  std::optional<Scratch<uint8_t>> a_copy, b_copy;
  int64_t a_ld, b_ld;
  const uint8_t* a = k_major(ctx, A.codes, M, K, lda, trans_a, a_copy, &a_ld);
  const uint8_t* b = k_major(ctx, B.codes, N, K, ldb, !trans_b, b_copy, &b_ld);
  const int64_t K16 = ceil_div(K, 16) * 16;  // K itself, or both operands were copied with zero codes up to it
  matmul(ctx, false, true, M, N, K16, a, a_ld, b, b_ld, C, ldc, accumulate,
         {float8_type(A.format), float8_type(B.format), A.inverse_scale, B.inverse_scale, fast_accumulation});
}

void convert_to_bf16(Context& ctx, const float* src, bf16* dst, int64_t n) {
  if (n == 0) return;
  const int threads = 256;
  auto blocks = [&](int64_t work) { return int(std::clamp<int64_t>(ceil_div(work, threads), 1, 8192)); };
  uint16_t* out = reinterpret_cast<uint16_t*>(dst);
  int64_t done = 0;
  if (reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 8 == 0) {
    const int64_t quads = n / 4;
    if (quads > 0)
      launch("convert_to_bf16", convert_to_bf16_x4_kernel, blocks(quads), threads, 0, ctx.stream(),
             reinterpret_cast<const float4*>(src), reinterpret_cast<Bf16x4*>(out), quads);
    done = quads * 4;
  }
  if (done < n)
    launch("convert_to_bf16", convert_to_bf16_kernel, blocks(n - done), threads, 0, ctx.stream(), src + done,
           out + done, n - done);
}

void gemm_bf16(Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda,
               const bf16* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (M == 0 || N == 0) return;
  matmul(ctx, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, {CUDA_R_16BF, CUDA_R_16BF});
}

void gemm(Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate, Precision precision, const bf16* B16,
          const bf16* A16) {
  if (M == 0 || N == 0) return;
  if (precision == Precision::fp32) {
    matmul(ctx, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, {CUDA_R_32F, CUDA_R_32F});
    return;
  }
  // Each operand: the caller's pre-rounded copy, else a copy rounded here into stream-ordered scratch.
  std::optional<Scratch<bf16>> a_rounded, b_rounded;
  if (!A16) {
    const int64_t a_size = trans_a ? span(K, M, lda) : span(M, K, lda);
    a_rounded.emplace(ctx, size_t(a_size));
    convert_to_bf16(ctx, A, a_rounded->get(), a_size);
    A16 = a_rounded->get();
  }
  if (!B16) {
    const int64_t b_size = trans_b ? span(N, K, ldb) : span(K, N, ldb);
    b_rounded.emplace(ctx, size_t(b_size));
    convert_to_bf16(ctx, B, b_rounded->get(), b_size);
    B16 = b_rounded->get();
  }
  gemm_bf16(ctx, trans_a, trans_b, M, N, K, A16, lda, B16, ldb, C, ldc, accumulate);
}

}  // namespace replica::cuda
