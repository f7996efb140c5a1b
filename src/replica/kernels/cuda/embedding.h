// Token embedding on the GPU, same contract as kernels/cpu/embedding.h: a row gather forward, a
// scatter-add backward that adds repeated ids in token order (the CPU's order, so the bits match).
#pragma once
#include <cstdint>

#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// out[n, :] = table[ids[n], :]; ids on the device, checked against V by the caller.
void embedding_forward(Context& ctx, float* out, const int32_t* ids, const float* table, int64_t N, int64_t C);

// dtable[ids[n], :] += dout[n, :]. `host_ids` are the same ids in host memory: the host groups the token
// positions by id (stable, so token order is kept), and each group's rows are added by one thread per
// column, in order, without atomics.
void embedding_backward(Context& ctx, float* dtable, const int32_t* host_ids, const float* dout, int64_t N,
                        int64_t C);

}  // namespace replica::cuda
