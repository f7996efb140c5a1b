// Device time per operation, for a profile of the training step (REPLICA_PROFILE=1 on the CUDA backend): a pair
// of CUDA events around every backend call, recorded on the stream, so nothing waits on the way and the step
// runs as it does unprofiled (a record costs the host about a microsecond). The events are read, and
// recycled, when the profile is taken. The gaps between one call's end and the next call's start are the
// time the GPU waited for the host.
#pragma once
#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "replica/kernels/backend.h"
#include "replica/kernels/cuda/context.h"

namespace replica::cuda {

class Profiler {
 public:
  explicit Profiler(cudaStream_t stream) : stream_(stream) {}
  ~Profiler() {
    for (const Span& s : spans_) recycle(s);
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
  }
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Times the work queued while it lives under `op`; a Scope of a null profiler does nothing.
  class Scope {
   public:
    Scope(Profiler* profiler, std::string op) : profiler_(profiler) {
      if (!profiler_) return;
      op_ = std::move(op);
      start_ = profiler_->mark();
    }
    ~Scope() {
      if (profiler_) profiler_->spans_.push_back({std::move(op_), start_, profiler_->mark()});
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Profiler* profiler_;
    std::string op_;
    cudaEvent_t start_ = nullptr;
  };

  // Waits for the stream, then sums the spans per operation.
  std::vector<OpTime> take() {
    check_cuda(cudaStreamSynchronize(stream_), "profile");
    std::map<std::string, OpTime> by_op;
    for (const Span& s : spans_) {
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, s.start, s.end), "cudaEventElapsedTime");
      OpTime& t = by_op[s.op];
      t.op = s.op;
      t.calls++;
      t.ms += ms;
      recycle(s);
    }
    spans_.clear();
    std::vector<OpTime> times;
    for (auto& [op, t] : by_op) times.push_back(std::move(t));
    return times;
  }

 private:
  struct Span {
    std::string op;
    cudaEvent_t start, end;
  };

  cudaEvent_t mark() {
    cudaEvent_t e = nullptr;
    if (free_.empty()) {
      check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    } else {
      e = free_.back();
      free_.pop_back();
    }
    check_cuda(cudaEventRecord(e, stream_), "cudaEventRecord");
    return e;
  }
  void recycle(const Span& s) {
    free_.push_back(s.start);
    free_.push_back(s.end);
  }

  cudaStream_t stream_;
  std::vector<Span> spans_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace replica::cuda
