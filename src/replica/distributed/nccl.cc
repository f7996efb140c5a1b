// NcclCommunicator: grouped ncclSend/ncclRecv on a communication stream behind the backend's work, then a polling
// wait with a deadline that also watches NCCL's asynchronous errors, mirroring MpiCommunicator.
#include "replica/distributed/nccl.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "replica/core/error.h"
#include "replica/distributed/collectives.h"

namespace replica::distributed {

// NCCL's name for the code plus its last detailed message, which usually says which peer or transport failed.
static std::string describe(ncclResult_t result, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  if (!last || !*last) return ncclGetErrorString(result);
  return fmt::format("{} ({})", ncclGetErrorString(result), last);
}

static void check_nccl(ncclResult_t result, const std::string& doing) {
  if (result != ncclSuccess) fail("nccl: {} failed: {}", doing, describe(result, nullptr));
}

static void check_cuda(cudaError_t code, const std::string& doing) {
  if (code != cudaSuccess) fail("nccl: {} failed: {}", doing, cudaGetErrorString(code));
}

static double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

NcclCommunicator::NcclCommunicator(Communicator& bootstrap, int device, cudaStream_t stream)
    : bootstrap_(bootstrap), stream_(stream), timeout_s_(dist_timeout_seconds()) {
  check_cuda(cudaSetDevice(device), fmt::format("cudaSetDevice({}) on rank {}", device, rank()));
  // Allocated before the communicator exists, so that a failure here leaves nothing to clean up.
  check_cuda(cudaMalloc(&flag_, 1), "cudaMalloc of the barrier byte");
  check_cuda(cudaMemset(flag_, 0, 1), "cudaMemset of the barrier byte");
  check_cuda(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking), "cudaStreamCreate (communication)");
  ncclUniqueId id{};
  if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  broadcast(bootstrap_, &id, sizeof id);  // host memory: the bootstrap is a host communicator (MPI)
  check_nccl(ncclCommInitRank(&comm_, size(), id, rank()),
             fmt::format("ncclCommInitRank (rank {} of {}, device {})", rank(), size(), device));
}

// Errors are ignored: a destructor cannot report them, and the process is ending its use of the GPU.
// ncclCommDestroy finalizes the communicator itself (flushing its operations) when it was not finalized.
NcclCommunicator::~NcclCommunicator() {
  cudaStreamSynchronize(stream_);
  cudaStreamSynchronize(comm_stream_);
  ncclCommDestroy(comm_);
  cudaStreamDestroy(comm_stream_);
  cudaFree(flag_);
}

// An exchange in flight on the communication stream.
class NcclCommunicator::Pending final : public PendingExchange {
 public:
  Pending(NcclCommunicator& comm, cudaEvent_t done, std::string what)
      : comm_(comm), done_(done), what_(std::move(what)) {}
  ~Pending() override {
    if (done_) cudaEventDestroy(done_);
  }
  void wait() override {
    const auto start = std::chrono::steady_clock::now();
    comm_.wait(std::exchange(done_, nullptr), what_);
    comm_.comm_seconds_ += seconds_since(start);
  }

 private:
  NcclCommunicator& comm_;
  cudaEvent_t done_;
  std::string what_;
};

cudaEvent_t NcclCommunicator::post(const std::vector<Send>& sends, const std::vector<Recv>& recvs, std::string& what) {
  std::set<int> peers;
  auto check_peer = [&](int peer) {
    check(peer >= 0 && peer < size() && peer != rank(), "nccl: rank {} cannot exchange with rank {} of {}", rank(),
          peer, size());
    peers.insert(peer);
  };
  for (const Send& t : sends) check_peer(t.peer);
  for (const Recv& t : recvs) check_peer(t.peer);
  what = "messages from/to rank(s)";
  for (int p : peers) what += fmt::format(" {}", p);
  // The kernels that wrote the send buffers, and those still reading the receive buffers, come first.
  cudaEvent_t ready = nullptr;
  check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventRecord(ready, stream_), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(comm_stream_, ready, 0), "cudaStreamWaitEvent");
  check_cuda(cudaEventDestroy(ready), "cudaEventDestroy");  // released once the wait has seen it
  // One group: NCCL posts every message at once (no deadlock whatever the order of the lists) and
  // matches the messages between two ranks in the order they were issued, as the interface requires.
  require(ncclGroupStart(), "ncclGroupStart");
  for (const Recv& t : recvs) require(ncclRecv(t.data, t.bytes, ncclChar, t.peer, comm_, comm_stream_), "ncclRecv");
  for (const Send& t : sends) require(ncclSend(t.data, t.bytes, ncclChar, t.peer, comm_, comm_stream_), "ncclSend");
  require(ncclGroupEnd(), "ncclGroupEnd");
  return record_done();
}

cudaEvent_t NcclCommunicator::record_done() {
  cudaEvent_t done = nullptr;
  check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventRecord(done, comm_stream_), "cudaEventRecord");
  return done;
}

void NcclCommunicator::exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  // The work queued before (e.g. the kernels that wrote the send buffers) finishes first, so that
  // comm_seconds and the timeout count the communication alone; a kernel error surfaces here as itself.
  check_cuda(cudaStreamSynchronize(stream_), "the GPU work before an exchange");
  const auto start = std::chrono::steady_clock::now();
  std::string what;
  const cudaEvent_t done = post(sends, recvs, what);
  wait(done, what);
  comm_seconds_ += seconds_since(start);
}

std::unique_ptr<PendingExchange> NcclCommunicator::start_exchange(const std::vector<Send>& sends,
                                                                  const std::vector<Recv>& recvs) {
  std::string what;
  const cudaEvent_t done = post(sends, recvs, what);
  return std::make_unique<Pending>(*this, done, std::move(what));
}

// A 1-byte all-reduce: no rank's result is ready before every rank has contributed, which a ring of
// sends (each rank hearing only from its neighbour) would not guarantee beyond two ranks.
void NcclCommunicator::barrier() {
  if (size() == 1) return;
  check_cuda(cudaStreamSynchronize(stream_), "the GPU work before a barrier");
  const auto start = std::chrono::steady_clock::now();
  require(ncclAllReduce(flag_, flag_, 1, ncclUint8, ncclMax, comm_, comm_stream_), "ncclAllReduce (barrier)");
  wait(record_done(), "a barrier");
  comm_seconds_ += seconds_since(start);
}

// Polls like MpiCommunicator::wait (poll_until), aborting the job on an asynchronous NCCL error (a peer or link
// failed) or once timeout_s_ has passed.
void NcclCommunicator::wait(cudaEvent_t done, const std::string& what) {
  double waited = 0;
  const bool finished = poll_until(
      [&] {
        const cudaError_t state = cudaEventQuery(done);
        if (state == cudaSuccess) {
          cudaEventDestroy(done);
          return true;
        }
        if (state != cudaErrorNotReady)
          abort(fmt::format("CUDA error while waiting for {}: {}; ending the job.", what, cudaGetErrorString(state)),
                3);
        ncclResult_t async = ncclSuccess;
        require(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
        if (async != ncclSuccess)
          abort(fmt::format("NCCL error while waiting for {}: {}: a rank died or its link failed; ending the job. "
                            "Restart it to resume from the last complete checkpoint.",
                            what, describe(async, comm_)),
                3);
        return false;
      },
      timeout_s_, waited);
  if (!finished) abort(no_progress_message(waited, what, timeout_s_), 3);
}

// A failed call between ncclGroupStart and the end of the wait leaves other ranks blocked on this one, so
// it ends the job rather than throwing.
void NcclCommunicator::require(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) abort(fmt::format("{} failed: {}; ending the job.", call, describe(result, comm_)), 3);
}

void NcclCommunicator::abort(const std::string& message, int status) {
  // Printed first: ncclCommAbort may take a while to tear down the connections.
  fmt::print(stderr, "replica: rank {} of {}: error: {}\n", rank(), size(), message);
  std::fflush(stderr);
  ncclCommAbort(comm_);  // stops this rank's unfinished NCCL kernels so that the process can exit
  bootstrap_.abort("NCCL communicator aborted after the error above", status);
  std::_Exit(status);  // not reached; GCC does not trust [[noreturn]] through a virtual call
}

}  // namespace replica::distributed
