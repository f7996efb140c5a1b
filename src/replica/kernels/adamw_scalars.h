// The scalars of one AdamW step, computed on the host once per step and given to every backend's element
// update (kernels/cpu/adamw.h, kernels/cuda/adamw.h), so both apply the same fp32 operations.
#pragma once
#include <cstdint>

#include "replica/kernels/types.h"

namespace replica {

// The step's scalars as torch computes them from Python floats and fp32 0-d tensors (fp32 pow and sqrt):
//   decay = 1 − lr·wd;  w1 = 1 − β1, w2 = 1 − β2;  bc1 = 1 − β1^t, bc2 = 1 − β2^t;
//   step size = lr / bc1 (torch: reciprocal(bc1) · lr);  the denominator's divisor sqrt(bc2).
AdamWScalars adamw_scalars(double beta1, double beta2, double eps, double weight_decay, int64_t step_count,
                           double lr);

}  // namespace replica
