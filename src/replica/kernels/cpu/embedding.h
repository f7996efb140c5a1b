// Token embedding: a row gather forward, a scatter-add backward.
#pragma once
#include <cstdint>

namespace replica::cpu {

// out[n, :] = table[ids[n], :] for n < N. Ids are checked against V by the caller.
void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t N, int64_t C);
// dtable[ids[n], :] += dout[n, :], in token order for every column (threads split the columns), so
// repeated ids accumulate deterministically.
void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C);

}  // namespace replica::cpu
