// Embedding forward (gather) and deterministic backward (grouped scatter-add).
#include <algorithm>
#include <numeric>
#include <vector>

#include "replica/kernels/cuda/common.cuh"
#include "replica/kernels/cuda/embedding.h"

namespace replica::cuda {

namespace {

__global__ void embedding_forward_kernel(float* out, const int32_t* ids, const float* table, int64_t C) {
  const int64_t n = blockIdx.x;
  const float* row = table + int64_t(ids[n]) * C;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) out[n * C + c] = row[c];
}

// Block (group, column tile): rows of dout listed in positions[starts[group] .. starts[group + 1]) all have
// id ids[group]; they are added into its row of dtable one after another, as the CPU loop does.
__global__ void embedding_backward_kernel(float* dtable, const int32_t* group_ids, const int32_t* starts,
                                          const int32_t* positions, const float* dout, int64_t C) {
  const int64_t c = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float* row = dtable + int64_t(group_ids[blockIdx.x]) * C;
  float sum = row[c];
  for (int32_t k = starts[blockIdx.x]; k < starts[blockIdx.x + 1]; k++) sum += dout[int64_t(positions[k]) * C + c];
  row[c] = sum;
}

}  // namespace

void embedding_forward(Context& ctx, float* out, const int32_t* ids, const float* table, int64_t N, int64_t C) {
  if (N == 0) return;
  launch("embedding_forward", embedding_forward_kernel, unsigned(N), 256, 0, ctx.stream(), out, ids, table, C);
}

void embedding_backward(Context& ctx, float* dtable, const int32_t* host_ids, const float* dout, int64_t N,
                        int64_t C) {
  if (N == 0) return;
  // positions sorted by id, ties in token order; then one group per distinct id.
  std::vector<int32_t> plan(static_cast<size_t>(N));  // positions, then group ids, then group starts
  std::iota(plan.begin(), plan.end(), 0);
  std::stable_sort(plan.begin(), plan.end(), [&](int32_t a, int32_t b) { return host_ids[a] < host_ids[b]; });
  std::vector<int32_t> group_ids, starts;
  for (int64_t k = 0; k < N; k++)
    if (k == 0 || host_ids[plan[size_t(k)]] != host_ids[plan[size_t(k - 1)]]) {
      group_ids.push_back(host_ids[plan[size_t(k)]]);
      starts.push_back(int32_t(k));
    }
  starts.push_back(int32_t(N));
  const int64_t groups = int64_t(group_ids.size());
  plan.insert(plan.end(), group_ids.begin(), group_ids.end());
  plan.insert(plan.end(), starts.begin(), starts.end());

  Scratch<int32_t> device_plan(ctx, plan.size());
  // From pageable memory the copy has read `plan` before it returns, so the vector may go out of scope.
  check_cuda(cudaMemcpyAsync(device_plan.get(), plan.data(), plan.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                             ctx.stream()),
             "embedding plan upload");
  const int32_t* positions = device_plan.get();
  const int32_t* d_group_ids = positions + N;
  const int32_t* d_starts = d_group_ids + groups;
  const dim3 grid(unsigned(groups), unsigned(ceil_div(C, 256)));
  launch("embedding_backward", embedding_backward_kernel, grid, 256, 0, ctx.stream(), dtable, d_group_ids, d_starts,
         positions, dout, C);
}

}  // namespace replica::cuda
