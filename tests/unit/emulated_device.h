// An emulated device for tests of everything above the kernel layer: a Backend whose memory the host cannot
// touch. Each allocation is its own mapping, kept PROT_NONE except while a backend call runs (a ForwardingBackend
// over the CPU backend, which does the work), so host code that reads or writes backend memory directly (instead
// of to_host / to_device) faults at once, as it would on a GPU. host_memory() is false, so every staging path of
// the GPU runs.
// EmulatedPeerCommunicator plays NCCL for data-parallel tests: it moves device memory between ranks (threads).
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "replica/distributed/communicator.h"
#include "replica/kernels/forwarding_backend.h"

namespace replica {

class EmulatedDevice final : public ForwardingBackend {
 public:
  EmulatedDevice() : ForwardingBackend(cpu_backend()) {}
  ~EmulatedDevice() override {
    for (auto& [p, bytes] : mappings_) munmap(p, bytes);
  }
  Device device() const override { return Device::cuda; }
  std::string describe() const override { return "emulated device (CPU kernels, memory closed to the host)"; }
  bool host_memory() const override { return false; }

  void* allocate(size_t bytes) override {
    const size_t size = std::max<size_t>(bytes, 1);
    std::lock_guard lock(mutex_);
    void* p = mmap(nullptr, size, open_count_ > 0 ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);  // zero-filled
    if (p == MAP_FAILED) throw std::runtime_error("EmulatedDevice: mmap failed");
    mappings_[p] = size;
    return p;
  }
  void release(void* p) override {
    std::lock_guard lock(mutex_);
    auto it = mappings_.find(p);
    if (it == mappings_.end()) throw std::runtime_error("EmulatedDevice: release of memory it did not allocate");
    munmap(p, it->second);
    mappings_.erase(it);
  }
  double peak_flops(Precision) override { return 1e12; }  // no measurement: tests do not report MFU

  size_t live_allocations() const { return mappings_.size(); }
  size_t live_bytes() const {
    size_t bytes = 0;
    for (const auto& [p, size] : mappings_) bytes += size;
    return bytes;
  }

  // The memory is open to the host while any backend call or peer exchange is using it (counted, since
  // other ranks' threads open it too).
  void open() {
    std::lock_guard lock(mutex_);
    if (open_count_++ == 0) protect(PROT_READ | PROT_WRITE);
  }
  void close() {
    std::lock_guard lock(mutex_);
    if (--open_count_ == 0) protect(PROT_NONE);
  }

 private:
  // Every copy and kernel (ForwardingBackend) runs on the CPU with the memory open.
  void enter(const CallName&) override { open(); }
  void leave() override { close(); }
  // One mprotect per run of adjacent mappings (mmap tends to place them next to each other): a training step makes
  // thousands of backend calls over hundreds of mappings, and a call per mapping was most of these tests' time.
  void protect(int mode) {
    static const size_t page = size_t(sysconf(_SC_PAGESIZE));
    char* run = nullptr;
    size_t run_bytes = 0;
    for (auto& [p, bytes] : mappings_) {
      char* start = static_cast<char*>(p);
      if (run != nullptr && run + run_bytes == start) {
        run_bytes += (bytes + page - 1) / page * page;
        continue;
      }
      if (run != nullptr) mprotect(run, run_bytes, mode);
      run = start, run_bytes = (bytes + page - 1) / page * page;
    }
    if (run != nullptr) mprotect(run, run_bytes, mode);
  }
  std::mutex mutex_;
  int open_count_ = 0;
  std::map<void*, size_t> mappings_;
};

// A communicator over the ranks of `inner` that hands it everything a subclass does not change (the tests' stand-ins
// for a job's transports).
class WrappingCommunicator : public distributed::Communicator {
 public:
  explicit WrappingCommunicator(distributed::Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void exchange(const std::vector<distributed::Send>& sends, const std::vector<distributed::Recv>& recvs) override {
    inner_.exchange(sends, recvs);
  }
  void barrier() override { inner_.barrier(); }
  [[noreturn]] void abort(const std::string& message, int status) override {
    inner_.abort(message, status);
    std::abort();  // not reached (GCC does not see [[noreturn]] through the virtual call)
  }

 protected:
  distributed::Communicator& inner_;
};

// Moves device memory between ranks, as NCCL does on GPUs: the exchange of `inner` (a host communicator)
// with every rank's device open.
class EmulatedPeerCommunicator final : public WrappingCommunicator {
 public:
  EmulatedPeerCommunicator(distributed::Communicator& inner, std::vector<EmulatedDevice*> devices)
      : WrappingCommunicator(inner), devices_(std::move(devices)) {}
  std::string name() const override { return "emulated-nccl"; }
  void exchange(const std::vector<distributed::Send>& sends, const std::vector<distributed::Recv>& recvs) override {
    for (EmulatedDevice* d : devices_) d->open();
    inner_.exchange(sends, recvs);
    for (EmulatedDevice* d : devices_) d->close();
  }

 private:
  std::vector<EmulatedDevice*> devices_;
};

}  // namespace replica
