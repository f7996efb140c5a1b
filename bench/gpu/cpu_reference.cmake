# replica_cpu_reference: the CPU kernels that check_kernels compares the CUDA kernels with, built from their own
# sources over reference_gemm.cc (a plain GEMM in place of oneDNN, which GPU machines lack). Shared by the GPU
# bench build (bench/gpu) and the CUDA emulation build (tests/cuda_emu). Needs REPLICA_ROOT, REPLICA_WARNINGS
# and REPLICA_OPT.
if(NOT TARGET replica_cpu_reference)
  set(CPU ${REPLICA_ROOT}/src/replica)
  add_library(replica_cpu_reference STATIC
    ${CPU}/core/bf16.cc ${CPU}/kernels/cpu/adamw.cc ${CPU}/kernels/cpu/rmsnorm.cc ${CPU}/kernels/cpu/rope.cc
    ${CPU}/kernels/cpu/attention.cc ${CPU}/kernels/cpu/swiglu.cc ${CPU}/kernels/cpu/embedding.cc
    ${CPU}/kernels/cpu/lm_head_loss.cc ${CPU}/kernels/cpu/sum_of_squares.cc ${CPU}/optim/clip.cc
    ${REPLICA_ROOT}/bench/gpu/reference_gemm.cc)
  target_include_directories(replica_cpu_reference PUBLIC ${REPLICA_ROOT}/src)
  target_compile_options(replica_cpu_reference PRIVATE ${REPLICA_WARNINGS} ${REPLICA_OPT})
  find_package(OpenMP)
  if(TARGET OpenMP::OpenMP_CXX)
    target_link_libraries(replica_cpu_reference PUBLIC OpenMP::OpenMP_CXX)
  endif()
endif()
