// DataParallel: the local micro-batch tree, the cross-rank reduce-scatter, the sharded norm, the ZeRO-1
// update and the moment gather/scatter for checkpoints.
#include "replica/dist/data_parallel.h"

#include <algorithm>
#include <cmath>

#include "replica/core/error.h"
#include "replica/dist/collectives.h"
#include "replica/dist/tree.h"

namespace replica {

// L = G / (W M), after checking that it is a whole number.
static int64_t local_micro_batches(int64_t global_batch, int64_t micro_batch, int world) {
  check(micro_batch > 0 && global_batch % (micro_batch * world) == 0,
        "data.global_batch_size={} must be a multiple of data.micro_batch_size={} times the {} ranks", global_batch,
        micro_batch, world);
  return global_batch / (micro_batch * world);
}

DataParallel::DataParallel(Communicator& control, Communicator& data, Backend& backend, const ParamTable& table,
                           AdamWConfig config, int64_t global_batch, int64_t micro_batch)
    : control_(control),
      data_(data),
      be_(backend),
      total_(table.total()),
      local_micro_(local_micro_batches(global_batch, micro_batch, control.size())),
      bounds_(shard_bounds(table.total(), control.size())),
      adamw_(table, config, bounds_[size_t(control.rank())], bounds_[size_t(control.rank()) + 1], backend) {
  check(data.size() == control.size() && data.rank() == control.rank(),
        "the data and control communicators disagree on rank or size");
  tree_buffers_.resize(size_t(tree_depth(local_micro_) - 1));
}

void DataParallel::arrange(std::vector<int32_t>& rows, int64_t row_len) const {
  const int64_t L = local_micro_, M = int64_t(rows.size()) / (row_len * L);
  std::vector<int32_t> out(rows.size());
  for (int64_t k = 0; k < L; k++)
    for (int64_t i = 0; i < M; i++)
      std::copy_n(rows.begin() + (k + L * i) * row_len, row_len, out.begin() + (k * M + i) * row_len);
  rows.swap(out);
}

LossSums DataParallel::gradients(float* grads, const std::function<LossSums(int64_t k, float* g)>& backward) {
  const int64_t L = local_micro_;
  const int W = control_.size();
  auto buffer = [&](int depth) {
    if (depth == 0) return grads;
    DeviceArray<float>& b = tree_buffers_[size_t(depth - 1)];
    if (b.empty()) b = DeviceArray<float>(be_, total_);
    return b.data();
  };
  // Loss sums of every micro-batch of the global batch, by micro-batch c = rank + W k: (ce, z, labels).
  const size_t n_sums = size_t(3 * L * W);
  std::vector<double> sums(n_sums, 0.0);
  const size_t mine = size_t(3 * L * control_.rank());
  tree_accumulate(
      L,
      [&](int64_t k, int depth) {
        float* g = buffer(depth);
        be_.zero(g, total_);
        const LossSums s = backward(k, g);
        sums[mine + size_t(3 * k)] = s.ce;
        sums[mine + size_t(3 * k + 1)] = s.z;
        sums[mine + size_t(3 * k + 2)] = double(s.n_labels);
      },
      [&](int depth) {
        float* d = buffer(depth);
        be_.add(d, d, buffer(depth + 1), int64_t(total_));
      });
  if (W > 1) reduce_scatter(data_, be_, grads, bounds_, scratch_);

  const size_t n_bounds = size_t(W) + 1;
  std::vector<size_t> sum_bounds(n_bounds);
  for (int r = 0; r <= W; r++) sum_bounds[size_t(r)] = size_t(3 * L * r);
  all_gather(control_, sums.data(), sum_bounds);
  // Reorder to micro-batch index c = r + W k, then add up the same tree as the gradients.
  const size_t n_micro = size_t(L * W);
  std::vector<LossSums> by_micro(n_micro);
  for (int r = 0; r < W; r++)
    for (int64_t k = 0; k < L; k++) {
      const double* s = &sums[size_t(3 * (L * r + k))];
      by_micro[size_t(r + W * k)] = {s[0], s[1], int64_t(s[2])};
    }
  tree_reduce(L * W, [&](int64_t dst, int64_t src) { by_micro[size_t(dst)] += by_micro[size_t(src)]; });
  return by_micro[0];
}

double DataParallel::clip(float* grads, double max_norm) {
  const double norm = std::sqrt(sum_of_squares(control_, be_, grads, bounds_));
  const double coef = std::min(1.0, max_norm / (norm + 1e-6));
  if (max_norm > 0 && coef < 1.0)  // as clip_grad_norm in optim/clip.cc
    be_.scale(grads + adamw_.begin(), adamw_.end() - adamw_.begin(), float(coef));
  return norm;
}

void DataParallel::step(float* params, const float* grads, double lr) {
  adamw_.step(params, grads, lr);
  if (data_.size() > 1) all_gather(data_, params, bounds_);
}

void DataParallel::gather_moments(float* exp_avg, float* exp_avg_sq) {
  std::vector<float> m(adamw_.end() - adamw_.begin()), v(m.size());
  adamw_.moments_to_host(m.data(), v.data());
  gather_to_root(control_, m.data(), bounds_, exp_avg);
  gather_to_root(control_, v.data(), bounds_, exp_avg_sq);
}

void DataParallel::load_moments(const float* exp_avg, const float* exp_avg_sq, int64_t step_count) {
  adamw_.moments_from_host(exp_avg + adamw_.begin(), exp_avg_sq + adamw_.begin());
  adamw_.step_count = step_count;
}

}  // namespace replica
