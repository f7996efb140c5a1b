// Data parallelism with sharded gradients and optimizer state (ZeRO-2), and optionally sharded weights (FSDP): every
// rank computes its micro-batches of the global batch (data/order.h: global micro-batches c = rank + W k) and owns one
// shard, its part of every parameter group (distributed/shard_layout.h), for which it holds the summed gradient (and, with
// sharded weights, the fp32 weights); the optimizer it is given holds its state for the same shard. One step:
//   gradients(): the model acquires each group of weights (a block, the head, the embedding) as it needs them
//                (model/weight_source.h): pointers into the whole buffer, or with sharded weights the group
//                gathered from every rank's part. The backward hands over each group's gradient as soon as it is
//                complete (model/gradient_sink.h); every rank's part of it goes at once to that rank, which adds
//                the W copies into its shard's sum;
//   clip():      global norm from every shard's block sums (the same for every W), clip shard (optim/clip.h);
//   step():      the optimizer on the shard; with whole weights on every rank, the new weights are then all-gathered.
// The sum runs over micro-batch c = rank + W k in increasing c: one chain of fp32 additions that every W computes
// alike, so with the same global and micro-batch size (and threads per rank) the result is bitwise independent of W,
// and of whether the weights are sharded (gathering copies bits). A micro-batch needs one group's gradient memory,
// not a whole gradient buffer, and the accumulation over micro-batches needs only the shard. W = 1 runs the same code
// with a LocalCommunicator.
// Weights, gradients and optimizer state live in the backend's memory. Two communicators: `data` moves backend memory
// (gradient groups, weights: NCCL on GPUs), `control` moves host memory (loss sums, norm block sums, checkpoint
// gathers: MPI). On the CPU both are the same object. train/step.h runs a whole step with it.
// With context parallelism of degree N (distributed/mesh.h) the N consecutive ranks of a group share each micro-batch, each
// computing its slice's part of the gradient: the micro-batches are counted over the W / N data-parallel ranks, and
// the shards and reductions stay over all W, the copies of rank r = N d + j (data rank d, slice j) added in rank
// order, so micro-batches in order and within one its slices in order: bitwise independent of W / N for a given N.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replica/distributed/communicator.h"
#include "replica/distributed/shard_layout.h"
#include "replica/kernels/backend.h"
#include "replica/model/gradient_sink.h"
#include "replica/model/weight_source.h"
#include "replica/optim/optimizer.h"

namespace replica::distributed {

// How much DataParallel shards, beyond the gradients and the optimizer state.
struct Sharding {
  bool weights = false;  // FSDP: the fp32 weights too; the model's groups are gathered as it acquires them
  // Bounds the buffer for the other ranks' copies of this rank's part of a gradient group: a group is reduced in
  // rounds of at most receive_floats / (W - 1) floats per rank pair (256 MiB in all by default).
  size_t receive_floats = size_t(1) << 26;
};

// What the error that refuses a global batch not divisible by micro-batch × data-parallel ranks suggests: the largest
// micro-batch size up to `micro_batch` that divides the global batch over those ranks ("; data.micro_batch_size=2
// fits 4 data-parallel ranks"), or that no micro-batch size does.
std::string micro_batch_hint(int64_t global_batch, int64_t micro_batch, int64_t data_ranks);

class DataParallel {
 public:
  // Raises Error unless micro_batch × world / context divides global_batch (context: ranks per context-parallel
  // group, which divides the world; distributed/mesh.h checks it).
  DataParallel(Communicator& control, Communicator& data, Backend& backend, const model::ParamTable& table,
               int64_t global_batch, int64_t micro_batch, Sharding sharding = {}, int context = 1);
  // On the CPU: one communicator for both.
  DataParallel(Communicator& comm, const model::ParamTable& table, int64_t global_batch, int64_t micro_batch,
               Sharding sharding = {})
      : DataParallel(comm, comm, cpu_backend(), table, global_batch, micro_batch, sharding) {}
  ~DataParallel();

  // Floats per rank pair and round of a group's reduction (W = 1: no reduction, one round).
  static size_t piece_floats(int world, size_t receive_floats) {
    return world > 1 ? std::max<size_t>(1, receive_floats / size_t(world - 1)) : SIZE_MAX;
  }
  // The floats `rank` receives at once: the other ranks' copies of one piece of its largest part of a group.
  static size_t receive_buffer_floats(const ShardLayout& layout, int rank, size_t receive_floats);

  Communicator& comm() { return control_; }  // the control communicator: rank, size, host collectives
  Backend& backend() { return be_; }
  int64_t micro_batches() const { return local_micro_; }  // per rank: L = G / (W M), W the data-parallel ranks
  const ShardLayout& layout() const { return layout_; }   // which floats each rank's shard holds
  // This rank's parts of the flat buffer, for the optimizer of its shard.
  std::vector<optim::Optimizer::Part> shard_parts() const;
  bool shards_weights() const { return sharding_.weights; }

  // Rank 0's whole weights (host memory; ignored elsewhere) go to every rank: all of them, or with sharded weights
  // each rank's shard.
  void load_weights(const float* whole);
  // Without sharded weights: this rank's whole weights (backend memory), which the model reads directly
  // (Transformer::whole_weights, which also keeps their bf16 copy).
  const float* whole_weights() const { return sharding_.weights ? nullptr : weights_.data(); }
  // Bumped whenever this rank's weights change (load_weights, step), so the model's bf16 copy of them follows.
  const model::WeightsVersion& weights_version() const { return weights_version_; }
  // With sharded weights: the model's view of them, each group gathered from its owners on acquire.
  model::WeightSource& gathered_weights();
  // Rank 0 gets the whole weights into host memory `whole` (total floats; other ranks pass nullptr). Every rank must
  // call it: with sharded weights it gathers the shards.
  void gather_weights(float* whole);

  // The global batch's gradient: backward(k, sink) must run local micro-batch k (global micro-batch rank + W k,
  // DataLoader::batch's rows [k M, (k + 1) M)) backward into `sink` (every rank
  // opens and closes the same groups in the same order) and return its loss sums. Afterwards grads() holds this rank's
  // shard of the sum over all micro-batches of all ranks. Returns the global loss sums, added in the same order (in
  // double; identical on every rank).
  LossSums gradients(const std::function<LossSums(int64_t k, model::GradientSink& sink)>& backward);
  // This rank's shard of the summed gradient: its parts of the flat buffer one after the other (ShardLayout).
  float* grads() { return grads_.data(); }

  // The global gradient norm (before clipping). The next step() scales the shard by clip_coefficient(norm, max_norm):
  // the optimizer multiplies each gradient as it reads it (the bits of scaling grads() here, a pass over it fewer).
  double clip(double max_norm);

  // `optimizer` (made for shard_parts()) updates this rank's shard of the weights from grads() (clipped, after
  // clip()); with whole weights every rank then gets the new ones.
  void step(optim::Optimizer& optimizer, double lr);

  // Checkpoints hold whole tensors, in host memory. gather_state: rank 0 gets state tensor i of the optimizer for the
  // whole buffer into `whole` (total floats; other ranks pass nullptr). load_state: every rank takes its shard of rank
  // 0's whole-buffer state tensor i (ignored elsewhere).
  void gather_state(const optim::Optimizer& optimizer, size_t i, float* whole);
  void load_state(optim::Optimizer& optimizer, size_t i, const float* whole);

 private:
  class Groups;
  class Gathered;
  void reduce_group(model::ParamTable::Range range, const float* group_grads);
  double sum_of_squares();  // of the summed gradient, over all shards
  void all_gather_weights();
  // Host memory: rank 0 gathers every rank's shard into the whole buffer, or sends every rank its shard of it.
  void gather_shards(const float* shard, float* whole);
  void scatter_shards(const float* whole, float* shard);

  Communicator& control_;
  Communicator& data_;
  Backend& be_;
  int64_t local_micro_;
  ShardLayout layout_;
  Sharding sharding_;
  DeviceArray<float> weights_;                   // fp32: the whole buffer, or this rank's shard
  model::WeightsVersion weights_version_;
  std::unique_ptr<Gathered> gathered_;           // the model's view of sharded weights
  DeviceArray<float> grads_;                     // this rank's shard of the summed gradient
  float clip_scale_ = 1.0f;                      // clip()'s coefficient, which the next step() applies
  size_t largest_group_;                         // floats
  size_t piece_;                                 // floats per rank pair and round of a group's reduction
  std::vector<DeviceArray<float>> group_grads_;  // one group's gradient each (at most two are open at once)
  DeviceArray<float> received_;                  // the other ranks' copies of a piece of this rank's part
};

}  // namespace replica::distributed
