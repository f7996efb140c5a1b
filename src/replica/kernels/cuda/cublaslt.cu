// cublaslt(): libcublasLt opened with dlopen on the first call (cublaslt.h says why), or the emulation's own.
#include "replica/kernels/cuda/cublaslt.h"

#include <cuda_runtime.h>  // the emulation's defines REPLICA_CUDA_EMULATION
#ifndef REPLICA_CUDA_EMULATION
#include <dlfcn.h>
#endif

#include <stdexcept>
#include <string>

namespace replica::cuda {

#ifdef REPLICA_CUDA_EMULATION

const CublasLt& cublaslt() {
  static const CublasLt api{
      &cublasLtCreate,
      &cublasLtDestroy,
      &cublasLtMatmul,
      &cublasLtMatmulAlgoGetHeuristic,
      &cublasLtMatmulDescCreate,
      &cublasLtMatmulDescDestroy,
      &cublasLtMatmulDescSetAttribute,
      &cublasLtMatmulPreferenceCreate,
      &cublasLtMatmulPreferenceDestroy,
      &cublasLtMatmulPreferenceSetAttribute,
      &cublasLtMatrixLayoutCreate,
      &cublasLtMatrixLayoutDestroy,
  };
  return api;
}

#else

namespace {

// By its soname first, searched as a linked library would be (LD_LIBRARY_PATH, then the binary's RUNPATH, the loader's
// cache), so a device bundle's LD_LIBRARY_PATH still decides; else the file the build found (CMake's CUDA::cublasLt).
void* open_library() {
  std::string reasons;
  for (const char* name : {"libcublasLt.so." REPLICA_CUBLASLT_SOVERSION, REPLICA_CUBLASLT_PATH}) {
    if (void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return library;
    reasons += std::string(reasons.empty() ? "" : "; ") + dlerror();
  }
  throw std::runtime_error("cannot open cuBLASLt (" + reasons + ")");
}

template <typename Function>
void resolve(void* library, const char* name, Function& out) {
  out = reinterpret_cast<Function>(dlsym(library, name));
  if (!out) throw std::runtime_error(std::string("cuBLASLt (") + REPLICA_CUBLASLT_PATH + ") has no " + name);
}

CublasLt open_cublaslt() {
  void* library = open_library();  // kept open for the process's life, as a linked library would be
  CublasLt api{};
  resolve(library, "cublasLtCreate", api.create);
  resolve(library, "cublasLtDestroy", api.destroy);
  resolve(library, "cublasLtMatmul", api.matmul);
  resolve(library, "cublasLtMatmulAlgoGetHeuristic", api.matmul_algo_get_heuristic);
  resolve(library, "cublasLtMatmulDescCreate", api.matmul_desc_create);
  resolve(library, "cublasLtMatmulDescDestroy", api.matmul_desc_destroy);
  resolve(library, "cublasLtMatmulDescSetAttribute", api.matmul_desc_set_attribute);
  resolve(library, "cublasLtMatmulPreferenceCreate", api.matmul_preference_create);
  resolve(library, "cublasLtMatmulPreferenceDestroy", api.matmul_preference_destroy);
  resolve(library, "cublasLtMatmulPreferenceSetAttribute", api.matmul_preference_set_attribute);
  resolve(library, "cublasLtMatrixLayoutCreate", api.matrix_layout_create);
  resolve(library, "cublasLtMatrixLayoutDestroy", api.matrix_layout_destroy);
  return api;
}

}  // namespace

const CublasLt& cublaslt() {
  static const CublasLt api = open_cublaslt();  // thread-safe; a failure is retried by the next call
  return api;
}

#endif

}  // namespace replica::cuda
