# replica_cpu_reference: the CPU kernels that check_kernels compares the CUDA kernels with, built from their own
# sources over reference_gemm.cc (a plain GEMM in place of oneDNN, which GPU machines lack). Shared by the GPU
# checks' build (tests/gpu) and the CUDA emulation build (tests/cuda_emu). Needs REPLICA_ROOT, REPLICA_WARNINGS
# and REPLICA_OPT.
if(NOT TARGET replica_cpu_reference)
  set(CPU ${REPLICA_ROOT}/src/replica)
  # Every CPU kernel but the oneDNN GEMM and the Backend over them (libreplica's).
  file(GLOB CPU_KERNELS CONFIGURE_DEPENDS ${CPU}/kernels/cpu/*.cc)
  list(REMOVE_ITEM CPU_KERNELS ${CPU}/kernels/cpu/gemm.cc ${CPU}/kernels/cpu/backend.cc)
  add_library(replica_cpu_reference STATIC ${CPU_KERNELS}
    ${CPU}/core/bf16.cc ${CPU}/core/huge_pages.cc ${CPU}/kernels/adamw.cc ${CPU}/kernels/rope_table.cc ${CPU}/optim/clip.cc
    ${REPLICA_ROOT}/tests/gpu/reference_gemm.cc)
  target_include_directories(replica_cpu_reference PUBLIC ${REPLICA_ROOT}/src)
  target_compile_options(replica_cpu_reference PRIVATE ${REPLICA_WARNINGS} ${REPLICA_OPT})
  find_package(OpenMP)
  if(TARGET OpenMP::OpenMP_CXX)
    target_link_libraries(replica_cpu_reference PUBLIC OpenMP::OpenMP_CXX)
  endif()
endif()
