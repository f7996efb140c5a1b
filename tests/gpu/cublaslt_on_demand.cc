// cuBLASLt is opened on first use, not at start (kernels/cuda/cublaslt.h): a process linked against replica_cuda, as
// `replica` and unit_tests are, has no libcublasLt mapped until the first call of cublaslt(), which then finds every
// entry point. Needs no GPU: opening the library and resolving symbols touch no device.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "replica/kernels/cuda/cublaslt.h"

namespace {

bool cublaslt_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libcublasLt") != std::string::npos;
}

}  // namespace

int main() {
  if (cublaslt_mapped()) {
    std::puts("FAIL: libcublasLt is mapped before the first cublaslt() call (it is linked, not opened on demand)");
    return 1;
  }
  const replica::cuda::CublasLt& lt = replica::cuda::cublaslt();
  const void* entries[] = {
      reinterpret_cast<const void*>(lt.create),
      reinterpret_cast<const void*>(lt.destroy),
      reinterpret_cast<const void*>(lt.matmul),
      reinterpret_cast<const void*>(lt.matmul_algo_get_heuristic),
      reinterpret_cast<const void*>(lt.matmul_desc_create),
      reinterpret_cast<const void*>(lt.matmul_desc_destroy),
      reinterpret_cast<const void*>(lt.matmul_desc_set_attribute),
      reinterpret_cast<const void*>(lt.matmul_preference_create),
      reinterpret_cast<const void*>(lt.matmul_preference_destroy),
      reinterpret_cast<const void*>(lt.matmul_preference_set_attribute),
      reinterpret_cast<const void*>(lt.matrix_layout_create),
      reinterpret_cast<const void*>(lt.matrix_layout_destroy),
  };
  for (const void* entry : entries)
    if (!entry) {
      std::puts("FAIL: an entry point of cuBLASLt is null");
      return 1;
    }
  if (!cublaslt_mapped()) {
    std::puts("FAIL: cublaslt() returned without libcublasLt mapped");
    return 1;
  }
  std::puts("ok: cuBLASLt opened on first use, every entry point resolved");
  return 0;
}
