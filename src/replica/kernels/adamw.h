// What AdamW's element updates on both backends share (kernels/cpu/adamw.h, kernels/cuda/adamw.h) with the
// optimizer that drives them (optim/adamw.h): the chunks of work, the scalars of one step, computed on the host once
// per step so that both apply the same fp32 operations, and the slab size of moments kept in host memory.
// Header-only but for adamw_scalars (adamw.cc), which the GPU checks build from source.
#pragma once
#include <cstddef>
#include <cstdint>

namespace replica {

// AdamW's fixed work unit: elements [begin, end) of the flat parameter buffer, inside one tensor; decay is
// 0 for the embedding (no weight decay), 1 elsewhere.
struct AdamWChunk {
  size_t begin, end;
  int32_t decay;
};

// The scalars of one AdamW step, computed on the host as torch computes them (adamw_scalars, below), so every
// backend applies the same fp32 operations to every element.
struct AdamWScalars {
  float decay, w1, keep1, w2, keep2, neg_step_size, bc2_sqrt, eps;
  // The clipping coefficient, multiplied into each gradient as it is read: the product that scaling the gradient
  // first would store (1: no clipping), without that pass over it.
  float grad_scale = 1.0f;
};

// The step's scalars as torch computes them from Python floats and fp32 0-d tensors (fp32 pow and sqrt):
//   decay = 1 − lr·wd;  w1 = 1 − β1, w2 = 1 − β2;  bc1 = 1 − β1^t, bc2 = 1 − β2^t;
//   step size = lr / bc1 (torch: reciprocal(bc1) · lr);  the denominator's divisor sqrt(bc2).
AdamWScalars adamw_scalars(double beta1, double beta2, double eps, double weight_decay, int64_t step_count, double lr);

// With the moments in host memory (optim.host_moments), a GPU streams them through two buffers per moment of at
// most this many floats (64 MiB): 256 MiB of device memory (Backend::adamw_step_host_moments).
constexpr size_t kHostMomentSlabFloats = size_t(16) << 20;
constexpr size_t kHostMomentStagingFloats = 4 * kHostMomentSlabFloats;

}  // namespace replica
