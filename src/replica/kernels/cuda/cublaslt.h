// cuBLASLt's entry points, opened on first use instead of linked. Loading libcublasLt runs its initialisers, about
// 0.5 s of CPU and 210 MB of resident memory, in every process that links it: every `replica` command and every
// unit test, the CPU-only ones included. Opened here, only a process that makes a CUDA context pays for it.
// The CUDA emulation (tests/cuda_emu) links its own cuBLASLt, and the table points at it directly.
#pragma once
#include <cublasLt.h>

namespace replica::cuda {

struct CublasLt {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtMatmul) matmul;
  decltype(&cublasLtMatmulAlgoGetHeuristic) matmul_algo_get_heuristic;
  decltype(&cublasLtMatmulDescCreate) matmul_desc_create;
  decltype(&cublasLtMatmulDescDestroy) matmul_desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) matmul_preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) matmul_preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) matmul_preference_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) matrix_layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) matrix_layout_destroy;
};

// The library, opened on the first call (std::runtime_error naming the file and dlerror's reason if it cannot be
// opened or lacks an entry point, as the context's other CUDA failures are reported).
const CublasLt& cublaslt();

}  // namespace replica::cuda
