// AdamW over the flat fp32 parameter buffer on the GPU, with kernels/cpu/adamw.cc's math in the same order
// of fp32 operations and no fused multiply-adds, so a GPU step equals the CPU step bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "replica/kernels/adamw.h"
#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

// One update of params[j], exp_avg[j], exp_avg_sq[j] from grads[j], j = i − shard_begin, for every i in the
// chunks (a device array of n_chunks, built by optim/adamw.cc); s from replica::adamw_scalars.
void adamw_step(Context& ctx, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                size_t shard_begin, const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s);

// adamw_step with the moments in page-locked host memory (optim.host_moments), for a model whose moments do not fit
// beside its activations (the 7B on one GPU: docs/gpu.md). The moments pass through two device buffers in slabs of
// at most slab_floats each: slab k comes in on one copy stream while slab k − 1 is updated on the compute stream and
// slab k − 2 goes back out on another (PCIe carries both directions at once). The update is adamw_step's kernel on
// each slab's chunks, so the bits are adamw_step's.
class HostMomentPipeline {
 public:
  explicit HostMomentPipeline(Context& ctx, size_t slab_floats = kHostMomentSlabFloats);
  ~HostMomentPipeline();
  HostMomentPipeline(const HostMomentPipeline&) = delete;
  HostMomentPipeline& operator=(const HostMomentPipeline&) = delete;

  // adamw_step's arguments, the moments in host memory and `host_chunks` the host copy of `chunks`. Queued on the
  // context's stream: its later work (and its synchronize) comes after the last slab is back in host memory.
  void step(float* params, const float* grads, float* host_exp_avg, float* host_exp_avg_sq, size_t shard_begin,
            const AdamWChunk* chunks, std::span<const AdamWChunk> host_chunks, const AdamWScalars& s);

 private:
  Context& ctx_;
  size_t slab_floats_;
  cudaStream_t in_ = nullptr, out_ = nullptr;  // the copies to the device and back
  float* buffer_[2][2] = {};                   // [buffer][exp_avg, exp_avg_sq]
  // Per buffer: its slab is on the device, updated, back in host memory (so the buffer is free again).
  cudaEvent_t loaded_[2] = {}, updated_[2] = {}, stored_[2] = {};
};

}  // namespace replica::cuda
