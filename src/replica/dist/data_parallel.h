// Data parallelism with sharded gradients and optimizer state (ZeRO-2): every rank holds the full fp32 weights,
// computes the micro-batches of its row[r::W] slice of the global batch, and owns one shard of the flat buffer, for
// which it holds the summed gradient and the Adam moments and does the update. One step:
//   gradients(): the backward hands over each group of parameters (a block, the head, the embedding) as soon as its
//                gradient is complete (model/gradient_sink.h); the group goes at once to the ranks whose shards it
//                overlaps, which add every rank's copy into their shard's sum;
//   clip():      global norm from every shard's block sums (identical to the unsharded norm), clip shard;
//   step():      AdamW on the shard, then the weights are all-gathered.
// The sum runs over micro-batch c = rank + W k in increasing c: one chain of fp32 additions that every W computes
// alike, so with the same global and micro-batch size (and threads per rank) the result is bitwise independent of W. A
// micro-batch needs one group's gradient memory, not a whole gradient buffer, and the accumulation over micro-batches
// needs only the shard. W = 1 runs the same code with a LocalCommunicator. Weights, gradients and moments live in the
// backend's memory. Two communicators: `data` moves backend memory (the gradient groups and the weight all-gather: NCCL
// on GPUs), `control` moves host memory (loss sums, norm block sums, checkpoint gathers: MPI). On the CPU both are the
// same object.
//
//   DataParallel dp(comm, table, adamw_config, G, M);
//   Batch b = loader.batch(epoch, step_batch, comm.rank(), comm.size());   // G / W rows
//   dp.arrange(tokens, T); dp.arrange(targets, T);                       // micro-batch k = rows [kM, (k+1)M)
//   LossSums s = dp.gradients([&](int64_t k, GradientSink& sink) { return model.forward_backward(params, sink,
//                             Batch{tokens + k*M*T, targets + k*M*T, M, T}, z, 1.0f / labels); });
//   double norm = dp.clip(1.0);  if (!skip) dp.step(params, lr);
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "replica/dist/communicator.h"
#include "replica/kernels/backend.h"
#include "replica/model/gradient_sink.h"
#include "replica/optim/adamw.h"

namespace replica {

class DataParallel {
 public:
  // Raises Error unless micro_batch × world divides global_batch. `receive_floats` bounds the buffer for the other
  // ranks' copies of this rank's part of a gradient group: a group is reduced in rounds of at most receive_floats / (W
  // - 1) floats per rank pair.
  DataParallel(Communicator& control, Communicator& data, Backend& backend, const ParamTable& table, AdamWConfig config,
               int64_t global_batch, int64_t micro_batch, size_t receive_floats = kReceiveFloats);
  // One communicator for both, on the CPU.
  DataParallel(Communicator& comm, const ParamTable& table, AdamWConfig config, int64_t global_batch,
               int64_t micro_batch, size_t receive_floats = kReceiveFloats)
      : DataParallel(comm, comm, cpu_backend(), table, config, global_batch, micro_batch, receive_floats) {}

  static constexpr size_t kReceiveFloats = size_t(1) << 26;  // 256 MiB
  // Floats per rank pair and round of a group's reduction (W = 1: no reduction, one round).
  static size_t piece_floats(int world, size_t receive_floats) {
    return world > 1 ? std::max<size_t>(1, receive_floats / size_t(world - 1)) : SIZE_MAX;
  }

  Communicator& comm() { return control_; }  // the control communicator: rank, size, host collectives
  Backend& backend() { return be_; }
  int64_t micro_batches() const { return local_micro_; }         // per rank: L = G / (W M)
  const std::vector<size_t>& bounds() const { return bounds_; }  // the shards (W + 1 offsets)
  AdamW& optimizer() { return adamw_; }

  // Reorders the rank's G / W rows of `row_len` values each (as DataLoader::batch returns them) so that micro-batch k
  // is rows [k M, (k + 1) M): the rank's rows k, k + L, k + 2L, ..., which are the global rows ≡ c (mod G / M) of
  // micro-batch c = rank + W k.
  void arrange(std::vector<int32_t>& rows, int64_t row_len) const;

  // The global batch's gradient: backward(k, sink) must run local micro-batch k's backward into `sink` (every rank
  // opens and closes the same groups in the same order) and return its loss sums. Afterwards grads() holds this rank's
  // shard of the sum over all micro-batches of all ranks. Returns the global loss sums, added in the same order (in
  // double; identical on every rank).
  LossSums gradients(const std::function<LossSums(int64_t k, GradientSink& sink)>& backward);
  // This rank's shard of the summed gradient: [bounds[rank], bounds[rank + 1]) of the flat buffer.
  float* grads() { return grads_.data(); }

  // The global gradient norm (before clipping); with max_norm > 0 the shard is clipped as clip_grad_norm does.
  double clip(double max_norm);

  // AdamW on this rank's shard of params from grads(), then every rank gets the new weights.
  void step(float* params, double lr);

  // Checkpoints hold whole tensors, in host memory. gather_moments: rank 0 gets both moments of the whole buffer into
  // exp_avg and exp_avg_sq (total floats each; other ranks pass nullptr). load_moments: every rank takes its shard from
  // whole-buffer moments.
  void gather_moments(float* exp_avg, float* exp_avg_sq);
  void load_moments(const float* exp_avg, const float* exp_avg_sq, int64_t step_count);

 private:
  class Groups;
  void reduce_group(ParamTable::Range range, const float* group_grads);

  Communicator& control_;
  Communicator& data_;
  Backend& be_;
  int64_t local_micro_;
  std::vector<size_t> bounds_;
  AdamW adamw_;
  DeviceArray<float> grads_;                     // this rank's shard of the summed gradient
  size_t largest_group_;                         // floats
  size_t piece_;                                 // floats per rank pair and round of a group's reduction
  std::vector<DeviceArray<float>> group_grads_;  // one group's gradient each (at most two are open at once)
  DeviceArray<float> received_;                  // the other ranks' copies of a piece of this rank's part
};

}  // namespace replica
