// Device time per operation, for a profile of the training step (Backend::profile; train.profile) on the
// CUDA backend: a decorator that records a pair of CUDA events around every forwarded call, on the stream, so
// nothing waits on the way and the step runs as it does unprofiled (a record costs the host about a
// microsecond). The events are read, and recycled, when the profile is taken. The gaps between one call's end
// and the next call's start are the time the GPU waited for the host.
#pragma once
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "replica/kernels/cuda/context.h"
#include "replica/kernels/forwarding_backend.h"

namespace replica::cuda {

class ProfilingBackend final : public ForwardingBackend {
 public:
  explicit ProfilingBackend(std::unique_ptr<Backend> inner)
      : ForwardingBackend(*inner), inner_(std::move(inner)), stream_(static_cast<cudaStream_t>(native_stream())) {}
  ~ProfilingBackend() override {
    drop();
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
  }

  // Starts timing every call, or stops and drops what was not taken.
  bool profile(bool on) override {
    if (!on) drop();
    on_ = on;
    return true;
  }
  // Waits for the stream, then sums the spans per operation.
  std::vector<OpTime> take_profile() override {
    check_cuda(cudaStreamSynchronize(stream_), "profile");
    std::map<std::string, OpTime> by_op;
    for (const Span& s : spans_) {
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, s.start, s.end), "cudaEventElapsedTime");
      OpTime& t = by_op[s.op];
      t.op = s.op;
      t.calls++;
      t.ms += ms;
      t.bytes += s.bytes;
    }
    drop();
    std::vector<OpTime> times;
    for (auto& [op, t] : by_op) times.push_back(std::move(t));
    return times;
  }

 protected:
  void enter(const CallName& name) override {
    if (on_) open_ = {name.str(), name.bytes(), mark(), nullptr};
  }
  void leave() override {
    if (!on_) return;
    open_.end = mark();
    spans_.push_back(std::move(open_));
  }

 private:
  struct Span {
    std::string op;
    double bytes;
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
  // Recycles the events of every span not taken.
  void drop() {
    for (const Span& s : spans_) free_.insert(free_.end(), {s.start, s.end});
    spans_.clear();
  }

  std::unique_ptr<Backend> inner_;
  cudaStream_t stream_;
  bool on_ = false;
  Span open_;  // the call being timed
  std::vector<Span> spans_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace replica::cuda
