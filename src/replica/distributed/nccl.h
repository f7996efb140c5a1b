// NCCL communicator: exchange() and barrier() between GPUs over device buffers, for the gradient
// reduce-scatter and the weight all-gather of a GPU job, and start_exchange() for the context-parallel gathers that
// overlap attention. Built only with CUDA and NCCL (REPLICA_HAVE_NCCL).
// The job's MPI communicator stays the bootstrap and carries host data; like it, a wait that makes no
// progress for REPLICA_DIST_TIMEOUT seconds ends the whole job instead of hanging.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "replica/distributed/communicator.h"

namespace replica::distributed {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `bootstrap` (every rank calls it): rank 0 creates the NCCL id and broadcasts it over
  // the bootstrap; every rank selects `device` (usually local_rank()) and joins. `stream` is the backend's, whose
  // work each message waits for; NCCL work runs on a communication stream of its own, so that what is queued on
  // `stream` after start_exchange() runs while the messages move. `bootstrap` must outlive this communicator.
  // Errors raise replica::Error.
  NcclCommunicator(Communicator& bootstrap, int device, cudaStream_t stream);
  ~NcclCommunicator() override;  // waits for both streams, then ncclCommDestroy
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return bootstrap_.rank(); }
  int size() const override { return bootstrap_.size(); }
  std::string name() const override { return "nccl"; }
  // Send::data and Recv::data are device pointers. Work queued earlier on the stream finishes first; on return
  // every message has arrived.
  void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) override;
  // Queues the messages on the communication stream behind the work queued on the backend's stream so far, and
  // returns; wait() polls for them as exchange() does (a dead peer ends the job with the same message).
  std::unique_ptr<PendingExchange> start_exchange(const std::vector<Send>& sends,
                                                  const std::vector<Recv>& recvs) override;
  void barrier() override;
  // Prints the message, aborts the NCCL communicator, then the bootstrap's abort ends the job.
  [[noreturn]] void abort(const std::string& message, int status) override;

 private:
  class Pending;
  // The messages' group queued on comm_stream_ after the work on stream_ so far: the event of its completion.
  // `what` receives their peers for the messages of wait ("messages from/to rank(s) 1 3").
  cudaEvent_t post(const std::vector<Send>& sends, const std::vector<Recv>& recvs, std::string& what);
  cudaEvent_t record_done();  // an event recorded on comm_stream_
  // Waits for `done` (then destroys it), aborting the job on an NCCL or CUDA error or after timeout_s_.
  // `what` names the operation for the message ("a barrier", "messages from/to rank(s) 1 3").
  void wait(cudaEvent_t done, const std::string& what);
  void require(ncclResult_t result, const char* call);  // aborts the job when an NCCL call fails
  Communicator& bootstrap_;
  cudaStream_t stream_;
  cudaStream_t comm_stream_ = nullptr;  // every NCCL operation, in the order this rank issues them
  ncclComm_t comm_ = nullptr;
  void* flag_ = nullptr;  // 1 device byte that barrier() all-reduces
  double timeout_s_;
};

}  // namespace replica::distributed
