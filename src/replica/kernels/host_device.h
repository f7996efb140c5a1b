// REPLICA_HOST_DEVICE marks a function that the CPU kernels and the CUDA kernels both call: __host__ __device__
// under nvcc, nothing in plain C++ (and in the CUDA emulation, where both qualifiers are empty anyway).
#pragma once

#ifdef __CUDACC__
#define REPLICA_HOST_DEVICE __host__ __device__
#else
#define REPLICA_HOST_DEVICE
#endif
