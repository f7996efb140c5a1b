// CPU emulation of cuBLASLt (include/cublasLt.h): D = alpha·op(A)·op(B) + beta·C on host memory, column-major,
// with the argument checks of the real library, so that a bug in the calling code fails here as on a GPU.
//
// The heuristic returns one algorithm, and that algorithm records the problem it was chosen for and the operand
// alignments it may assume. A real algorithm is not portable: run on a problem it was not chosen for, or on
// operands less aligned than the preference promised, it may be refused, compute garbage or fault. The emulator
// refuses both with CUBLAS_STATUS_INVALID_VALUE instead, so that a wrong algorithm cache key, or an alignment
// promise the operands do not keep, shows up in CI rather than as a misaligned-address fault on some GPU run.
//
// Numerics: each output element accumulates the products in double in k order (a product of two floats is exact
// in double, so the result does not depend on FMA contraction), then D = float(alpha·acc) + beta·C in float.
// A GPU sums in another order and in fp32, so it agrees to rounding, not bit for bit. float8 operands (CUDA_R_8F_E4M3,
// CUDA_R_8F_E5M2) are their codes' exact values, and D = float(alpha·scale_a·scale_b·acc) + beta·C; fast
// accumulation is accepted and changes nothing here (it lets a GPU keep its partial sums at lower precision).
#include <cublasLt.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "replica/kernels/float8.h"

// The descriptors behind the header's opaque pointers (declared there in the global namespace).
struct cublasLtContext {
  // The emulator keeps no per-handle state: the handle only has to exist, and be told apart from a null one.
  int unused = 0;
};

struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};

struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute_type;
  cudaDataType scale_type;
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N, trans_c = CUBLAS_OP_N;
  const float* a_scale = nullptr;  // device pointers; null reads as 1
  const float* b_scale = nullptr;
  int8_t fast_accum = 0;
};

struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t max_workspace_bytes = 0;                  // cuBLASLt's default: no workspace
  uint32_t min_alignment[4] = {256, 256, 256, 256};  // A, B, C, D; cuBLASLt's documented default
};

namespace cublaslt_emu {
namespace {

constexpr cublasStatus_t kSuccess = CUBLAS_STATUS_SUCCESS, kInvalid = CUBLAS_STATUS_INVALID_VALUE,
                         kNotSupported = CUBLAS_STATUS_NOT_SUPPORTED;

// Tags the algorithms this emulator made: a zeroed or garbage cublasLtMatmulAlgo_t is refused.
constexpr uint64_t kAlgoTag = 0x52504c41;  // "RPLA"
// The largest alignment any algorithm assumes: pointers aligned to 256 bytes are aligned enough for all.
constexpr uint32_t kMaxAlignment = 256;
// The emulated algorithm needs no workspace (the encoding and the checks leave room for one that does).
constexpr uint32_t kWorkspaceBytes = 0;

bool float8_type(int64_t type) { return type == CUDA_R_8F_E4M3 || type == CUDA_R_8F_E5M2; }
bool known_type(int64_t type) {
  return type == CUDA_R_32F || type == CUDA_R_16F || type == CUDA_R_16BF || float8_type(type);
}
bool known_compute_type(int64_t type) { return type == CUBLAS_COMPUTE_32F || type == CUBLAS_COMPUTE_32F_FAST_TF32; }
bool known_operation(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T; }

// Copies an attribute value out of the caller's buffer; a buffer of the wrong size is refused, as cuBLASLt does.
template <typename T>
cublasStatus_t read_attribute(const void* buf, size_t size, T* value) {
  if (buf == nullptr || size != sizeof(T)) return kInvalid;
  std::memcpy(value, buf, sizeof(T));
  return kSuccess;
}

// A GEMM as the descriptors define it: D (m × n) = alpha·op(A) (m × k)·op(B) (k × n) + beta·C (m × n).
struct Problem {
  bool trans_a = false, trans_b = false;
  uint64_t m = 0, n = 0, k = 0;
  cudaDataType a_type = CUDA_R_32F, b_type = CUDA_R_32F, c_type = CUDA_R_32F, d_type = CUDA_R_32F;
  int32_t compute_type = CUBLAS_COMPUTE_32F, scale_type = CUDA_R_32F;
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  const float* a_scale = nullptr;  // float8 operands' scales (descriptor attributes), null: 1
  const float* b_scale = nullptr;
};

// What an algorithm assumes beyond the problem: each operand's alignment in bytes (A, B, C, D) and its workspace.
struct Assumptions {
  uint32_t alignment[4] = {kMaxAlignment, kMaxAlignment, kMaxAlignment, kMaxAlignment};
  uint32_t workspace_bytes = kWorkspaceBytes;
};

// Checks the descriptors of one GEMM and reads the problem from them: INVALID_VALUE for what cuBLASLt refuses as
// inconsistent (a null descriptor, ld < rows, shapes that do not multiply), NOT_SUPPORTED for a consistent problem
// outside what the emulator computes (the type combinations replica uses: bf16 or fp32 inputs, fp32 output,
// CUBLAS_COMPUTE_32F with fp32 scale). A real GPU also runs other combinations, TF32 and fp16 among them; they are
// refused here rather than computed with the wrong rounding.
cublasStatus_t describe(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, Problem* problem) {
  if (op == nullptr || a == nullptr || b == nullptr || c == nullptr || d == nullptr) return kInvalid;
  // Attributes set one at a time can leave a layout inconsistent in between, so it is checked again here.
  for (const cublasLtMatrixLayout_t layout : {a, b, c, d})
    if (layout->ld < 0 || uint64_t(layout->ld) < layout->rows) return kInvalid;
  if (op->trans_c != CUBLAS_OP_N) return kNotSupported;  // cuBLASLt supports only CUBLAS_OP_N for C

  Problem p;
  p.trans_a = op->trans_a == CUBLAS_OP_T;
  p.trans_b = op->trans_b == CUBLAS_OP_T;
  // The layouts describe the stored matrices, before the transposes.
  p.m = p.trans_a ? a->cols : a->rows;
  p.k = p.trans_a ? a->rows : a->cols;
  const uint64_t b_rows = p.trans_b ? b->cols : b->rows;
  p.n = p.trans_b ? b->rows : b->cols;
  if (b_rows != p.k || c->rows != p.m || c->cols != p.n || d->rows != p.m || d->cols != p.n) return kInvalid;

  p.a_type = a->type;
  p.b_type = b->type;
  p.c_type = c->type;
  p.d_type = d->type;
  p.compute_type = op->compute_type;
  p.scale_type = op->scale_type;
  if (float8_type(p.a_type) || float8_type(p.b_type)) {
    // cublasLtMatmul's float8 requirements: both operands float8, not both e5m2; A transposed and B not (the "TN"
    // format); their leading dimensions multiples of 16 (16 bytes); fp32 C and D here (the real library also
    // writes bf16, fp16 or float8 D).
    if (!float8_type(p.a_type) || !float8_type(p.b_type)) return kNotSupported;
    if (p.a_type == CUDA_R_8F_E5M2 && p.b_type == CUDA_R_8F_E5M2) return kNotSupported;
    if (!p.trans_a || p.trans_b) return kNotSupported;
    if (a->ld % 16 != 0 || b->ld % 16 != 0) return kNotSupported;
    p.a_scale = op->a_scale;
    p.b_scale = op->b_scale;
  } else if (p.a_type != p.b_type || (p.a_type != CUDA_R_32F && p.a_type != CUDA_R_16BF)) {
    return kNotSupported;
  }
  if (p.c_type != CUDA_R_32F || p.d_type != CUDA_R_32F) return kNotSupported;
  if (p.compute_type != CUBLAS_COMPUTE_32F || p.scale_type != CUDA_R_32F) return kNotSupported;
  // cuBLASLt documents sizes beyond int32 as usually unsupported, and the algorithm encoding keeps 32 bits of each.
  constexpr uint64_t kMaxSize = uint64_t(std::numeric_limits<int32_t>::max());
  if (p.m > kMaxSize || p.n > kMaxSize || p.k > kMaxSize) return kNotSupported;

  p.lda = a->ld;
  p.ldb = b->ld;
  p.ldc = c->ld;
  p.ldd = d->ld;
  *problem = p;
  return kSuccess;
}

// An algorithm is its problem and assumptions, packed into the 512 bits cuBLASLt gives an algorithm:
//   data[0]: tag << 32 | log2 of the alignments of A, B, C, D in bytes 0..3
//   data[1]: m | n << 32            data[2]: k | workspace bytes << 32
//   data[3]: types of A, B, C, D in bytes 0..3 | compute type << 32 | scale type << 40 | transa << 48 | transb << 49
//   data[4..7]: lda, ldb, ldc, ldd
cublasLtMatmulAlgo_t encode(const Problem& p, const Assumptions& assumed) {
  cublasLtMatmulAlgo_t algo{};
  algo.data[0] = kAlgoTag << 32;
  for (int i = 0; i < 4; i++) algo.data[0] |= uint64_t(std::countr_zero(assumed.alignment[i])) << (8 * i);
  algo.data[1] = p.m | p.n << 32;
  algo.data[2] = p.k | uint64_t(assumed.workspace_bytes) << 32;
  algo.data[3] = uint64_t(uint8_t(p.a_type)) | uint64_t(uint8_t(p.b_type)) << 8 | uint64_t(uint8_t(p.c_type)) << 16 |
                 uint64_t(uint8_t(p.d_type)) << 24 | uint64_t(uint8_t(p.compute_type)) << 32 |
                 uint64_t(uint8_t(p.scale_type)) << 40 | uint64_t(p.trans_a) << 48 | uint64_t(p.trans_b) << 49;
  algo.data[4] = uint64_t(p.lda);
  algo.data[5] = uint64_t(p.ldb);
  algo.data[6] = uint64_t(p.ldc);
  algo.data[7] = uint64_t(p.ldd);
  return algo;
}

// The assumptions recorded in an algorithm this emulator made; false for anything else.
bool decode_assumptions(const cublasLtMatmulAlgo_t& algo, Assumptions* assumed) {
  if (algo.data[0] >> 32 != kAlgoTag) return false;
  for (int i = 0; i < 4; i++) {
    const uint64_t log2 = (algo.data[0] >> (8 * i)) & 0xff;
    if (log2 > uint64_t(std::countr_zero(kMaxAlignment))) return false;
    assumed->alignment[i] = uint32_t(1) << log2;
  }
  assumed->workspace_bytes = uint32_t(algo.data[2] >> 32);
  return true;
}

// The alignment an algorithm chosen under a MIN_ALIGNMENT preference may rely on: the strictest an algorithm can
// require (a power of two, at most 256) without exceeding the promise.
uint32_t assumed_alignment(uint32_t promised) {
  return std::max(std::bit_floor(std::min(promised, kMaxAlignment)), 1u);
}

// The heuristic: one algorithm for the problem, assuming what the preference promises.
cublasStatus_t choose(const Problem& p, const cublasLtMatmulPreferenceOpaque_t& pref, cublasLtMatmulAlgo_t* algo) {
  Assumptions assumed;
  for (int i = 0; i < 4; i++) assumed.alignment[i] = assumed_alignment(pref.min_alignment[i]);
  if (pref.max_workspace_bytes < assumed.workspace_bytes) return kNotSupported;  // no algorithm fits
  *algo = encode(p, assumed);
  return kSuccess;
}

// One element of a stored matrix, widened: bf16 is the upper half of a float's bits, a float8 code its exact value.
float element(const void* base, cudaDataType type, int64_t index) {
  if (float8_type(type)) {
    const uint8_t code = static_cast<const uint8_t*>(base)[index];
    return replica::from_float8(code, type == CUDA_R_8F_E4M3 ? replica::Float8Format::e4m3 : replica::Float8Format::e5m2);
  }
  if (type == CUDA_R_16BF) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const char*>(base) + index * 2, sizeof bits);
    return std::bit_cast<float>(uint32_t(bits) << 16);
  }
  float value;
  std::memcpy(&value, static_cast<const char*>(base) + index * 4, sizeof value);
  return value;
}

// Output columns per tile in compute(), and the granularity of narrower (last) tiles.
constexpr int64_t kTileCols = 256, kColChunk = 4;

// row[0, width) += a · b[0, width), width a multiple of kColChunk. Each loop has a constant trip count, which GCC
// vectorises at -O2 too (its cheap cost model skips loops whose count is only known at run time).
inline void multiply_add(double* row, double a, const double* b, int64_t width) {
  if (width == kTileCols) {
    for (int64_t j = 0; j < kTileCols; j++) row[j] += a * b[j];
    return;
  }
  for (int64_t j0 = 0; j0 < width; j0 += kColChunk)
    for (int64_t j = j0; j < j0 + kColChunk; j++) row[j] += a * b[j];
}

// D = alpha·op(A)·op(B) + beta·C for a problem describe() accepted. The operands are first copied into contiguous
// double matrices, op(A) as m × k and op(B) as k × n (both row-major), so that the inner loop runs over n with unit
// stride and vectorises while each element still sums over k in order. Tiles keep the working set in cache. op(B)'s
// rows are padded with zeros to a multiple of kColChunk for multiply_add; the padding's sums are never stored.
void compute(const Problem& p, float alpha, const void* A, const void* B, float beta, const float* C, float* D) {
  constexpr int64_t kRows = 64, kCols = kTileCols, kDepth = 128;  // a 128 × 256 tile of op(B) is 256 KiB
  const int64_t m = int64_t(p.m), n = int64_t(p.n), k = int64_t(p.k);
  const int64_t n_padded = (n + kColChunk - 1) / kColChunk * kColChunk;
  const double scale = double(p.a_scale ? *p.a_scale : 1.0f) * double(p.b_scale ? *p.b_scale : 1.0f);
  std::vector<double> a(size_t(m * k)), b(size_t(k * n_padded), 0.0);
  for (int64_t i = 0; i < m; i++)
    for (int64_t l = 0; l < k; l++)
      a[size_t(i * k + l)] = element(A, p.a_type, p.trans_a ? l + i * p.lda : i + l * p.lda);
  for (int64_t l = 0; l < k; l++)
    for (int64_t j = 0; j < n; j++)
      b[size_t(l * n_padded + j)] = element(B, p.b_type, p.trans_b ? j + l * p.ldb : l + j * p.ldb);

  std::vector<double> acc(size_t(kRows * kCols));
  for (int64_t j0 = 0; j0 < n; j0 += kCols) {
    const int64_t cols = std::min(kCols, n - j0), width = std::min(kCols, n_padded - j0);
    for (int64_t i0 = 0; i0 < m; i0 += kRows) {
      const int64_t rows = std::min(kRows, m - i0);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t l0 = 0; l0 < k; l0 += kDepth) {
        const int64_t depth = std::min(kDepth, k - l0);
        for (int64_t i = 0; i < rows; i++)
          for (int64_t l = l0; l < l0 + depth; l++)
            multiply_add(&acc[size_t(i * kCols)], a[size_t((i0 + i) * k + l)], &b[size_t(l * n_padded + j0)], width);
      }
      for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
          const int64_t r = i0 + i, c = j0 + j;
          const float product = float(double(alpha) * scale * acc[size_t(i * kCols + j)]);
          // As in cuBLAS, C is not read when beta is 0: it may hold anything, NaN included. C may be D (in place):
          // each element of C is read just before the same element of D is written.
          D[r + c * p.ldd] = beta == 0.0f ? product : product + beta * C[r + c * p.ldc];
        }
    }
  }
}

bool aligned(const void* p, uint32_t alignment) { return reinterpret_cast<uintptr_t>(p) % alignment == 0; }

bool same_layout(const cublasLtMatrixLayoutOpaque_t& x, const cublasLtMatrixLayoutOpaque_t& y) {
  return x.type == y.type && x.rows == y.rows && x.cols == y.cols && x.ld == y.ld;
}

}  // namespace
}  // namespace cublaslt_emu

using namespace cublaslt_emu;

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return kInvalid;
  *handle = new (std::nothrow) cublasLtContext;
  return *handle ? kSuccess : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return kSuccess;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (layout == nullptr || !known_type(type)) return kInvalid;
  // Column-major: columns must not overlap, so ld is at least the number of rows (and never negative).
  if (ld < 0 || uint64_t(ld) < rows) return kInvalid;
  *layout = new (std::nothrow) cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
  return *layout ? kSuccess : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;  // destroying a null descriptor is a no-op, as freeing null is
  return kSuccess;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  if (layout == nullptr) return kInvalid;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: {
      uint32_t type;
      if (read_attribute(buf, sizeInBytes, &type) != kSuccess || !known_type(type)) return kInvalid;
      layout->type = cudaDataType(type);
      return kSuccess;
    }
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return read_attribute(buf, sizeInBytes, &layout->rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return read_attribute(buf, sizeInBytes, &layout->cols);
    case CUBLASLT_MATRIX_LAYOUT_LD: return read_attribute(buf, sizeInBytes, &layout->ld);
  }
  return kInvalid;  // an attribute this emulator does not know
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  if (desc == nullptr || !known_compute_type(computeType) || !known_type(scaleType)) return kInvalid;
  *desc = new (std::nothrow) cublasLtMatmulDescOpaque_t{computeType, scaleType};
  return *desc ? kSuccess : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return kSuccess;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes) {
  if (desc == nullptr) return kInvalid;
  int32_t value;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: return read_attribute(buf, sizeInBytes, &desc->a_scale);
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: return read_attribute(buf, sizeInBytes, &desc->b_scale);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return read_attribute(buf, sizeInBytes, &desc->fast_accum);
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      if (read_attribute(buf, sizeInBytes, &value) != kSuccess || !known_compute_type(value)) return kInvalid;
      desc->compute_type = cublasComputeType_t(value);
      return kSuccess;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      if (read_attribute(buf, sizeInBytes, &value) != kSuccess || !known_type(value)) return kInvalid;
      desc->scale_type = cudaDataType(value);
      return kSuccess;
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
    case CUBLASLT_MATMUL_DESC_TRANSC: {
      if (read_attribute(buf, sizeInBytes, &value) != kSuccess || !known_operation(value)) return kInvalid;
      int32_t& field = attr == CUBLASLT_MATMUL_DESC_TRANSA   ? desc->trans_a
                       : attr == CUBLASLT_MATMUL_DESC_TRANSB ? desc->trans_b
                                                             : desc->trans_c;
      field = value;
      return kSuccess;
    }
  }
  return kInvalid;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return kInvalid;
  *pref = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t;
  return *pref ? kSuccess : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return kSuccess;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  if (pref == nullptr) return kInvalid;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return read_attribute(buf, sizeInBytes, &pref->max_workspace_bytes);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return read_attribute(buf, sizeInBytes, &pref->min_alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES]);
  }
  return kInvalid;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (preference == nullptr || requestedAlgoCount <= 0 || heuristicResultsArray == nullptr ||
      returnAlgoCount == nullptr)
    return kInvalid;
  *returnAlgoCount = 0;
  Problem problem;
  if (const cublasStatus_t status = describe(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &problem); status != kSuccess)
    return status;
  cublasLtMatmulHeuristicResult_t result{};
  if (const cublasStatus_t status = choose(problem, *preference, &result.algo); status != kSuccess) return status;
  Assumptions assumed;
  decode_assumptions(result.algo, &assumed);
  result.workspaceSize = assumed.workspace_bytes;
  result.state = kSuccess;
  result.wavesCount = 1.0f;
  heuristicResultsArray[0] = result;
  *returnAlgoCount = 1;
  return kSuccess;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceSizeInBytes, cudaStream_t stream) {
  (void)workspace;                 // the emulated algorithms need none
  cuda_emu::order_stream(stream);  // the stream's earlier copies first; the product then runs at once
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  Problem problem;
  if (const cublasStatus_t status = describe(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &problem); status != kSuccess)
    return status;
  if (alpha == nullptr || beta == nullptr) return kInvalid;
  // Pointer mode host (the default): the scale type is fp32, so alpha and beta are floats.
  const float alpha_value = *static_cast<const float*>(alpha), beta_value = *static_cast<const float*>(beta);
  // In place (C == D) needs C and D described alike; cuBLASLt refuses otherwise.
  if (C == D && !same_layout(*Cdesc, *Ddesc)) return kInvalid;
  // A GPU would fault on a null operand it reads; report it instead of crashing.
  const bool empty = problem.m == 0 || problem.n == 0;
  if (!empty && (D == nullptr || (problem.k > 0 && (A == nullptr || B == nullptr)) ||
                 (beta_value != 0.0f && C == nullptr)))
    return kInvalid;

  // No algorithm: cuBLASLt runs the heuristic itself, with default preferences.
  cublasLtMatmulAlgo_t implicit;
  if (algo == nullptr) {
    if (const cublasStatus_t status = choose(problem, cublasLtMatmulPreferenceOpaque_t{}, &implicit);
        status != kSuccess)
      return status;
    algo = &implicit;
  }
  Assumptions assumed;
  if (!decode_assumptions(*algo, &assumed)) return kInvalid;  // not an algorithm the heuristic returned
  const cublasLtMatmulAlgo_t expected = encode(problem, assumed);
  if (!std::equal(std::begin(algo->data), std::end(algo->data), std::begin(expected.data)))
    return kInvalid;  // chosen for another problem
  const void* operands[4] = {A, B, C, D};
  for (int i = 0; i < 4; i++)
    if (!aligned(operands[i], assumed.alignment[i])) return kInvalid;  // a misaligned-address fault on a GPU
  if (workspaceSizeInBytes < assumed.workspace_bytes) return kInvalid;

  if (empty) return kSuccess;
  try {
    compute(problem, alpha_value, A, B, beta_value, static_cast<const float*>(C), static_cast<float*>(D));
  } catch (const std::bad_alloc&) {
    return CUBLAS_STATUS_ALLOC_FAILED;  // the operand copies did not fit in host memory
  }
  return kSuccess;
}
