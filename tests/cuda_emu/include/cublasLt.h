// CPU emulation of cuBLASLt (tests/cuda_emu/README.md): the subset replica's CUDA backend calls, with NVIDIA's
// names, signatures and numeric values, so that the real backend source compiles against it unchanged. Only what
// the emulator implements is declared: code that starts using another attribute or entry point fails to compile
// here rather than silently doing something else. Device pointers are host pointers and every call completes
// before it returns (the stream argument is accepted and ignored).
//
// Numeric values are the real ones (library_types.h, cublas_api.h, cublasLt.h of CUDA 11/12; the attribute values
// were checked against NVIDIA's cublasLt.h and the nvmath-python cublasLt bindings).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

// library_types.h
enum cudaDataType_t {
  CUDA_R_32F = 0,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
  CUDA_R_8F_E4M3 = 28,  // float8 (OCP e4m3fn)
  CUDA_R_8F_E5M2 = 29,
};
using cudaDataType = cudaDataType_t;

// cublas_api.h
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};

enum cublasComputeType_t {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,  // declared for completeness; the emulator answers NOT_SUPPORTED
};

enum cublasOperation_t {
  CUBLAS_OP_N = 0,
  CUBLAS_OP_T = 1,
};

// Opaque handle and descriptors. (The real descriptors are "semi-opaque" fixed-size structs that can also be
// initialised in caller memory; replica only creates them on the heap, so they stay incomplete types here.)
struct cublasLtContext;
struct cublasLtMatrixLayoutOpaque_t;
struct cublasLtMatmulDescOpaque_t;
struct cublasLtMatmulPreferenceOpaque_t;
using cublasLtHandle_t = cublasLtContext*;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t*;

// An algorithm as the heuristic returns it: plain data that callers copy and cache (replica keeps one per GEMM
// shape), exactly as large as the real one.
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};

struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;  // workspace the algorithm needs
  cublasStatus_t state;  // the other fields are valid only when this is CUBLAS_STATUS_SUCCESS
  float wavesCount;      // device utilisation estimate (1.0: the GPU is fully occupied)
  int reserved[4];
};

// Matrix layout attributes. The type each value is passed as is noted; sizeInBytes must match it.
enum cublasLtMatrixLayoutAttribute_t {
  CUBLASLT_MATRIX_LAYOUT_TYPE = 0,  // uint32_t (a cudaDataType)
  CUBLASLT_MATRIX_LAYOUT_ROWS = 2,  // uint64_t
  CUBLASLT_MATRIX_LAYOUT_COLS = 3,  // uint64_t
  CUBLASLT_MATRIX_LAYOUT_LD = 4,    // int64_t, at least ROWS (column-major)
};

// Matmul descriptor attributes.
enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,  // int32_t (a cublasComputeType_t)
  CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,    // int32_t (a cudaDataType): type of alpha and beta
  CUBLASLT_MATMUL_DESC_TRANSA = 3,        // int32_t (a cublasOperation_t), default CUBLAS_OP_N
  CUBLASLT_MATMUL_DESC_TRANSB = 4,        // int32_t (a cublasOperation_t), default CUBLAS_OP_N
  CUBLASLT_MATMUL_DESC_TRANSC = 5,        // int32_t; only CUBLAS_OP_N is supported (by cuBLASLt too)
  CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17,  // const void* (device float), default null: scale of A (float8 A only)
  CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18,  // const void* (device float), default null: scale of B (float8 B only)
  CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25,       // int8_t, default 0: float8's faster, less exact accumulation
};

// Heuristic search preferences.
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,    // uint64_t, default 0
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,  // uint32_t, default 256
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,  // uint32_t, default 256
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,  // uint32_t, default 256
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,  // uint32_t, default 256
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);

// A column-major rows × cols matrix of `type` whose columns start ld elements apart.
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes);

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes);

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes);

// Returns at most requestedAlgoCount algorithms for D = alpha·op(A)·op(B) + beta·C as described; the emulator
// always returns exactly one, bound to this problem and to the alignments the preference promises.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount);

// D = alpha·op(A)·op(B) + beta·C (column-major). alpha and beta point to values of the scale type. algo may be
// null, in which case an implicit heuristic query with default preferences picks one.
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceSizeInBytes, cudaStream_t stream);
