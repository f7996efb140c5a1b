// AdamW step: one block per chunk. The _rn intrinsics round every product, quotient and sum to fp32
// separately (nvcc would otherwise contract a·b + c into an FMA), reproducing the CPU's order exactly.
#include "replica/kernels/cuda/adamw.h"
#include "replica/kernels/cuda/common.cuh"

namespace replica::cuda {

namespace {

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t shard_begin,
                             const AdamWChunk* chunks, AdamWScalars s) {
  const AdamWChunk chunk = chunks[blockIdx.x];
  const float p_scale = chunk.decay ? s.decay : 1.0f;
  for (size_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const size_t j = i - shard_begin;
    const float g = __fmul_rn(grads[j], s.grad_scale);
    const float p = __fmul_rn(params[j], p_scale);
    const float mi = __fadd_rn(__fmul_rn(m[j], s.keep1), __fmul_rn(g, s.w1));
    const float vi = __fadd_rn(__fmul_rn(v[j], s.keep2), __fmul_rn(__fmul_rn(g, g), s.w2));
    m[j] = mi;
    v[j] = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), s.bc2_sqrt), s.eps);
    params[j] = __fadd_rn(p, __fmul_rn(__fdiv_rn(mi, denom), s.neg_step_size));
  }
}

}  // namespace

void adamw_step(Context& ctx, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                size_t shard_begin, const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s) {
  if (n_chunks == 0) return;
  launch("adamw_step", adamw_kernel, unsigned(n_chunks), 256, 0, ctx.stream(), params, grads, exp_avg, exp_avg_sq,
         shard_begin, chunks, s);
}

HostMomentPipeline::HostMomentPipeline(Context& ctx, size_t slab_floats) : ctx_(ctx), slab_floats_(slab_floats) {
  check_cuda(cudaStreamCreateWithFlags(&in_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda(cudaStreamCreateWithFlags(&out_, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int b = 0; b < 2; b++) {
    for (float*& moment : buffer_[b]) check_cuda(cudaMalloc(&moment, slab_floats * sizeof(float)), "cudaMalloc");
    for (cudaEvent_t* e : {&loaded_[b], &updated_[b], &stored_[b]}) check_cuda(cudaEventCreate(e), "cudaEventCreate");
  }
}

HostMomentPipeline::~HostMomentPipeline() {
  cudaStreamSynchronize(out_);
  for (int b = 0; b < 2; b++) {
    for (float* moment : buffer_[b]) cudaFree(moment);
    for (cudaEvent_t e : {loaded_[b], updated_[b], stored_[b]}) cudaEventDestroy(e);
  }
  cudaStreamDestroy(in_);
  cudaStreamDestroy(out_);
}

void HostMomentPipeline::step(float* params, const float* grads, float* host_m, float* host_v, size_t shard_begin,
                              const AdamWChunk* chunks, std::span<const AdamWChunk> host_chunks,
                              const AdamWScalars& s) {
  const cudaStream_t compute = ctx_.stream();
  size_t first = 0;  // the slab's first chunk
  for (int k = 0; first < host_chunks.size(); k++) {
    // The slab: whole chunks from `first` while their span of the shard's arrays fits a buffer (a chunk always does).
    const size_t lo = host_chunks[first].begin;
    size_t end = first + 1;
    while (end < host_chunks.size() && host_chunks[end].end - lo <= slab_floats_) end++;
    const size_t j = lo - shard_begin, bytes = (host_chunks[end - 1].end - lo) * sizeof(float);
    const int b = k & 1;
    float* const m = buffer_[b][0];
    float* const v = buffer_[b][1];
    // In, once the buffer's last slab is out.
    check_cuda(cudaStreamWaitEvent(in_, stored_[b], 0), "cudaStreamWaitEvent");
    check_cuda(cudaMemcpyAsync(m, host_m + j, bytes, cudaMemcpyHostToDevice, in_), "exp_avg to the GPU");
    check_cuda(cudaMemcpyAsync(v, host_v + j, bytes, cudaMemcpyHostToDevice, in_), "exp_avg_sq to the GPU");
    check_cuda(cudaEventRecord(loaded_[b], in_), "cudaEventRecord");
    // Updated: the kernel indexes every array from the slab's first element.
    check_cuda(cudaStreamWaitEvent(compute, loaded_[b], 0), "cudaStreamWaitEvent");
    launch("adamw_step", adamw_kernel, unsigned(end - first), 256, 0, compute, params + j, grads + j, m, v, lo,
           chunks + first, s);
    check_cuda(cudaEventRecord(updated_[b], compute), "cudaEventRecord");
    // Out.
    check_cuda(cudaStreamWaitEvent(out_, updated_[b], 0), "cudaStreamWaitEvent");
    check_cuda(cudaMemcpyAsync(host_m + j, m, bytes, cudaMemcpyDeviceToHost, out_), "exp_avg to the host");
    check_cuda(cudaMemcpyAsync(host_v + j, v, bytes, cudaMemcpyDeviceToHost, out_), "exp_avg_sq to the host");
    check_cuda(cudaEventRecord(stored_[b], out_), "cudaEventRecord");
    first = end;
  }
  for (cudaEvent_t e : stored_) check_cuda(cudaStreamWaitEvent(compute, e, 0), "cudaStreamWaitEvent");
}

}  // namespace replica::cuda
