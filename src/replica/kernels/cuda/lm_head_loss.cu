// Chunked LM head + cross-entropy + z-loss: per chunk a cuBLASLt GEMM to fp32 logits, one block per row for
// max, log-sum-exp and (training) the logit gradient, then the two backward GEMMs. In bf16 the hidden rows are
// rounded once for all chunks and the loss kernel writes the logit gradient straight to bf16, the operand both
// backward GEMMs take: the same bf16 values as rounding the fp32 gradient inside each GEMM, without its four
// sweeps (two reads of the fp32 gradient and two of the hidden rows per chunk).
#include <algorithm>
#include <optional>
#include <vector>

#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/gemm.h"
#include "replica/kernels/cuda/lm_head_loss.h"

namespace replica::cuda {

namespace {

constexpr int kThreads = 1024;

// For row r of the chunk: lse = max + log Σ exp(logit − max) (per-thread fp32 partials, added in double in
// a fixed tree); ce and z into row_ce/row_z. With grad_scale > 0 the row is overwritten by
// d(loss)/dlogit = grad_scale · (p · (1 + 2·z_coef·lse) − [j = target]); unlabelled rows get zeros. With grad16
// the gradient goes there instead, rounded to bf16 (row r at grad16 + r·V), and the logits are left as they were.
__global__ void __launch_bounds__(kThreads) loss_rows_kernel(float* logits, uint16_t* grad16, double* row_ce,
                                                             double* row_z, const int32_t* targets, int64_t V,
                                                             float z_coef, bool with_grads, float grad_scale) {
  __shared__ float shared_f[32];
  __shared__ double shared_d[32];
  const int64_t r = blockIdx.x;
  float* l = logits + r * V;
  const int32_t target = targets[r];
  if (target == kIgnoreLabel) {
    row_ce[r] = 0.0;
    row_z[r] = 0.0;
    if (with_grads)
      for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
        if (grad16)
          grad16[r * V + j] = 0;  // +0 in bf16
        else
          l[j] = 0.0f;
      }
    return;
  }
  const float target_logit = l[target];
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, l[j]);
  m = block_max(m, shared_f);
  float part = 0.0f;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) part += expf(l[j] - m);
  const double sum = block_sum(double(part), shared_d);
  const double lse = double(m) + log(sum);
  if (threadIdx.x == 0) {
    row_ce[r] = lse - double(target_logit);
    row_z[r] = lse * lse;
  }
  if (!with_grads) return;
  __syncthreads();  // every thread has read l[target] before it is overwritten
  const float k = float((1.0 + 2.0 * z_coef * lse) / sum) * grad_scale;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    const float p = expf(l[j] - m) * k;
    const float g = j == target ? p - grad_scale : p;
    if (grad16)
      grad16[r * V + j] = to_bf16_bits(g);
    else
      l[j] = g;
  }
}

}  // namespace

LossSums lm_head_loss(Context& ctx, const float* hidden, WeightRef weight, const int32_t* targets, int64_t N,
                      int64_t C, int64_t V, float z_coef, Precision precision, const LmHeadGrads* grads) {
  if (N == 0) return {};
  const int64_t chunk = std::clamp<int64_t>((int64_t(1) << 26) / V, 1, N);
  Scratch<float> logits(ctx, size_t(chunk * V));
  Scratch<double> row_values(ctx, size_t(2 * N));  // ce, then z
  double* row_ce = row_values.get();
  double* row_z = row_ce + N;
  std::optional<Scratch<bf16>> hidden16, grad16;  // bf16: the hidden rows, rounded once; a chunk's logit gradient
  if (precision == Precision::bf16) {
    hidden16.emplace(ctx, size_t(N * C));
    convert_to_bf16(ctx, hidden, hidden16->get(), N * C);
    if (grads) grad16.emplace(ctx, size_t(chunk * V));
  }
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t rows = std::min(chunk, N - n0);
    const bf16* h16 = hidden16 ? hidden16->get() + n0 * C : nullptr;
    bf16* g16 = grad16 ? grad16->get() : nullptr;
    // logits = hidden · Wᵀ
    gemm(ctx, false, true, rows, V, C, hidden + n0 * C, C, weight.f32, C, logits.get(), V, false, precision,
         weight.b16, h16);
    launch("lm_head loss_rows", loss_rows_kernel, unsigned(rows), kThreads, 0, ctx.stream(), logits.get(),
           reinterpret_cast<uint16_t*>(g16), row_ce + n0, row_z + n0, targets + n0, V, z_coef, grads != nullptr,
           grads ? grads->grad_scale : 0.0f);
    if (!grads) continue;
    // dhidden = dlogits · W,  dW += dlogitsᵀ · hidden (in bf16 from g16; the fp32 logits are then not read)
    gemm(ctx, false, false, rows, C, V, logits.get(), V, weight.f32, C, grads->dhidden + n0 * C, C, false, precision,
         weight.b16, g16);
    gemm(ctx, true, false, V, C, rows, logits.get(), V, hidden + n0 * C, C, grads->dweight, C, true, precision, h16,
         g16);
  }

  std::vector<double> host_values(size_t(2 * N));
  std::vector<int32_t> host_targets(static_cast<size_t>(N));
  check_cuda(cudaMemcpyAsync(host_values.data(), row_ce, host_values.size() * sizeof(double), cudaMemcpyDeviceToHost,
                             ctx.stream()), "lm_head loss download");
  check_cuda(cudaMemcpyAsync(host_targets.data(), targets, host_targets.size() * sizeof(int32_t),
                             cudaMemcpyDeviceToHost, ctx.stream()), "lm_head targets download");
  ctx.synchronize();
  LossSums sums;
  for (int64_t n = 0; n < N; n++) {
    if (host_targets[size_t(n)] == kIgnoreLabel) continue;
    sums.ce += host_values[size_t(n)];
    sums.z += host_values[size_t(N + n)];
    sums.n_labels++;
  }
  return sums;
}

}  // namespace replica::cuda
