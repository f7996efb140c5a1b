// Data parallelism with ZeRO-1: every rank holds the full fp32 weights and gradient buffer, computes the
// micro-batches of its row[r::W] slice of the global batch, and owns one shard of the flat buffer for
// which it holds the Adam moments and does the update. One step:
//   gradients(): each micro-batch's gradient into its own buffer, summed up the fixed tree of
//                dist/tree.h locally, then across ranks by a tree reduce-scatter (fp32);
//   clip():      global norm from every shard's block sums (identical to the unsharded norm), clip shard;
//   step():      AdamW on the shard, then the weights are all-gathered.
// With W a power of two the result is bitwise independent of W (same global and micro-batch size and
// threads per rank); W = 1 runs the same code with a LocalCommunicator.
// Weights, gradients and moments live in the backend's memory. Two communicators: `data` moves backend
// memory (the gradient reduce-scatter and weight all-gather: NCCL on GPUs), `control` moves host memory
// (loss sums, norm block sums, checkpoint gathers: MPI). On the CPU both are the same object.
//
//   DataParallel dp(comm, table, adamw_config, G, M);
//   Batch b = loader.batch(epoch, step_batch, comm.rank(), comm.size());   // G / W rows
//   dp.arrange(tokens, T); dp.arrange(targets, T);                       // micro-batch k = rows [kM, (k+1)M)
//   LossSums s = dp.gradients(grads, [&](int64_t k, float* g) { return model.forward_backward(params, g,
//                                        Batch{tokens + k*M*T, targets + k*M*T, M, T}, z, 1.0f / labels); });
//   double norm = dp.clip(grads, 1.0);  if (!skip) dp.step(params, grads, lr);
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "replica/dist/communicator.h"
#include "replica/kernels/backend.h"
#include "replica/optim/adamw.h"

namespace replica {

class DataParallel {
 public:
  // Raises Error unless micro_batch × world divides global_batch.
  DataParallel(Communicator& control, Communicator& data, Backend& backend, const ParamTable& table,
               AdamWConfig config, int64_t global_batch, int64_t micro_batch);
  // One communicator for both, on the CPU.
  DataParallel(Communicator& comm, const ParamTable& table, AdamWConfig config, int64_t global_batch,
               int64_t micro_batch)
      : DataParallel(comm, comm, cpu_backend(), table, config, global_batch, micro_batch) {}

  Communicator& comm() { return control_; }  // the control communicator: rank, size, host collectives
  Backend& backend() { return be_; }
  int64_t micro_batches() const { return local_micro_; }  // per rank: L = G / (W M)
  const std::vector<size_t>& bounds() const { return bounds_; }  // the ZeRO-1 shards (W + 1 offsets)
  AdamW& optimizer() { return adamw_; }

  // Reorders the rank's G / W rows of `row_len` values each (as DataLoader::batch returns them) so that
  // micro-batch k is rows [k M, (k + 1) M): the rank's rows k, k + L, k + 2L, ..., which are the global
  // rows ≡ c (mod G / M) of micro-batch c = rank + W k.
  void arrange(std::vector<int32_t>& rows, int64_t row_len) const;

  // The global batch's gradient: backward(k, g) must add local micro-batch k's gradient to the zeroed
  // buffer g and return its loss sums. Afterwards this rank's shard of grads holds the fixed-tree sum over
  // all micro-batches of all ranks (elsewhere grads holds partial sums). Returns the global loss sums,
  // added up the same tree (identical on every rank).
  LossSums gradients(float* grads, const std::function<LossSums(int64_t k, float* g)>& backward);

  // The global gradient norm (before clipping); with max_norm > 0 the shard is clipped as clip_grad_norm does.
  double clip(float* grads, double max_norm);

  // AdamW on this rank's shard of params from its shard of grads, then every rank gets the new weights.
  void step(float* params, const float* grads, double lr);

  // Checkpoints hold whole tensors, in host memory. gather_moments: rank 0 gets both moments of the whole
  // buffer into exp_avg and exp_avg_sq (total floats each; other ranks pass nullptr). load_moments: every
  // rank takes its shard from whole-buffer moments.
  void gather_moments(float* exp_avg, float* exp_avg_sq);
  void load_moments(const float* exp_avg, const float* exp_avg_sq, int64_t step_count);

 private:
  Communicator& control_;
  Communicator& data_;
  Backend& be_;
  size_t total_;
  int64_t local_micro_;
  std::vector<size_t> bounds_;
  AdamW adamw_;
  std::vector<DeviceArray<float>> tree_buffers_;  // partial sums below the top of the local tree
  DeviceArray<float> scratch_;                    // reduce-scatter receive buffer
};

}  // namespace replica
