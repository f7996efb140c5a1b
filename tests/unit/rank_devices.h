// Test helper: the ranks of a job as threads (thread_communicator.h), each on the device a job's rank runs on: the
// CPU backend; an emulated device of its own (emulated_device.h) with the emulated NCCL; or a CUDA backend of its own
// (new_cuda_backend: the emulated GPU of libreplica_cuda_emu in CI, a real one under bench/gpu/run.sh).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "emulated_device.h"
#include "replica/kernels/backend.h"
#include "thread_communicator.h"

namespace replica {

enum class RankDevice { cpu, emulated, cuda };

// NCCL's contract (messages between backend memory) over any backend: each message is copied to the host, exchanged
// by `inner`, and copied into the receiving backend's memory.
class StagedPeerCommunicator final : public WrappingCommunicator {
 public:
  StagedPeerCommunicator(distributed::Communicator& inner, Backend& backend)
      : WrappingCommunicator(inner), backend_(backend) {}
  std::string name() const override { return "staged-peers"; }
  void exchange(const std::vector<distributed::Send>& sends, const std::vector<distributed::Recv>& recvs) override {
    std::vector<std::vector<char>> sent(sends.size()), received(recvs.size());
    std::vector<distributed::Send> host_sends;
    std::vector<distributed::Recv> host_recvs;
    for (size_t i = 0; i < sends.size(); i++) {
      sent[i].resize(sends[i].bytes);
      if (sends[i].bytes > 0) backend_.to_host(sent[i].data(), sends[i].data, sends[i].bytes);
      host_sends.push_back({sends[i].peer, sent[i].data(), sends[i].bytes});
    }
    for (size_t i = 0; i < recvs.size(); i++) {
      received[i].resize(recvs[i].bytes);
      host_recvs.push_back({recvs[i].peer, received[i].data(), recvs[i].bytes});
    }
    inner_.exchange(host_sends, host_recvs);
    for (size_t i = 0; i < recvs.size(); i++)
      if (recvs[i].bytes > 0) backend_.to_device(recvs[i].data, received[i].data(), recvs[i].bytes);
  }

 private:
  Backend& backend_;
};

// Runs body(control, data, backend) on `world` threads, one rank each: `control` carries host data, `data` the
// backend's memory (the host communicator itself on the CPU).
inline void run_ranks(
    int world, RankDevice device,
    const std::function<void(distributed::Communicator& control, distributed::Communicator& data, Backend&)>& body) {
  std::vector<std::unique_ptr<EmulatedDevice>> owned;
  std::vector<EmulatedDevice*> emulated;
  if (device == RankDevice::emulated)
    for (int r = 0; r < world; r++) emulated.push_back(owned.emplace_back(new EmulatedDevice).get());
  distributed::ThreadGroup group(world);
  group.run([&](distributed::Communicator& comm) {
    if (device == RankDevice::cpu) return body(comm, comm, cpu_backend());
    if (device == RankDevice::emulated) {
      EmulatedPeerCommunicator peers(comm, emulated);
      return body(comm, peers, *emulated[size_t(comm.rank())]);
    }
    const std::unique_ptr<Backend> gpu = new_cuda_backend();
    StagedPeerCommunicator peers(comm, *gpu);
    body(comm, peers, *gpu);
  });
}

}  // namespace replica
