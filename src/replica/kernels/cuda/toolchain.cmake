# CUDA toolchain settings shared by the main build and the standalone GPU checks build (tests/gpu):
# finds nvcc (also at /usr/local/cuda when it is not on PATH), fixes the target architectures, and enables
# CUDA when it works. Sets REPLICA_HAVE_CUDA. Include it from the top directory of the build.
include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  find_program(REPLICA_NVCC_ON_PATH nvcc)
  if(NOT REPLICA_NVCC_ON_PATH)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
  endif()
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  # Hopper machine code (sm_90a: wgmma, TMA) plus compute_90 PTX that newer GPUs can JIT. One arch keeps CI fast.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "90a-real;90-virtual")
  endif()
  # CUDA::cudart (shared) everywhere; CMake's default would also link cudart_static.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set(CMAKE_CUDA_STANDARD 17)  # for enable_language's own checks, which CMake < 3.26 cannot run in C++20
  enable_language(CUDA)
  # CMake 3.25 (Debian 12) does not know nvcc's C++20 flag; newer CMake defines these itself.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  set(REPLICA_HAVE_CUDA ON)
else()
  set(REPLICA_HAVE_CUDA OFF)
endif()
