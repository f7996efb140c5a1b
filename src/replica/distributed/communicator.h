// Communicator: the processes of a data-parallel job and the point-to-point exchange that every
// collective in distributed/ is built from. Local (one process) and Mpi (Open MPI, host buffers) implement it,
// and with CUDA Nccl (distributed/nccl.h: grouped ncclSend/ncclRecv over device buffers, bootstrapped over Mpi).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace replica::distributed {

// The messages of an exchange: `bytes` bytes sent from `data` to rank `peer`, or received into `data` from it.
struct Send {
  int peer;
  const void* data;
  size_t bytes;
};
struct Recv {
  int peer;
  void* data;
  size_t bytes;
};

// An exchange that Communicator::start_exchange began; wait() returns once its messages have arrived.
class PendingExchange {
 public:
  virtual ~PendingExchange() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "local", "mpi" or "nccl"

  // Posts every receive and send, then waits until all have completed. Between two ranks, messages are
  // matched in the order they are listed. A rank never sends to itself.
  virtual void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) = 0;
  // The same exchange, begun now and finished by the result's wait(), so that work queued on the device meanwhile
  // overlaps it (NCCL: on a communication stream, after the work queued so far). Until wait() returns the buffers
  // are the exchange's: nothing may write a send buffer or touch a receive buffer. Exchanges begun and exchanges
  // made are matched between two ranks in the order each rank calls them. This one exchanges at once.
  virtual std::unique_ptr<PendingExchange> start_exchange(const std::vector<Send>& sends,
                                                          const std::vector<Recv>& recvs);
  virtual void barrier() = 0;
  // Ends the whole job with `status` after printing `message` (one rank failing must not leave the others
  // waiting).
  [[noreturn]] virtual void abort(const std::string& message, int status) = 0;

  // Wall time spent in exchange() and barrier() so far, for the scaling measurement.
  double comm_seconds() const { return comm_seconds_; }

 protected:
  double comm_seconds_ = 0.0;
};

// One process: rank 0 of 1. exchange() accepts only empty lists.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local"; }
  void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) override;
  void barrier() override {}
  [[noreturn]] void abort(const std::string& message, int status) override;
};

// The job's communicator: Mpi when the launcher offers MPI a world (mpirun, srun --mpi=pmix, PMIX_RANK: distributed/launch.h),
// else Local; an Error (exit 2) when srun started more tasks than MPI joins. Call once per process; the Mpi one
// finalizes MPI when destroyed.
std::unique_ptr<Communicator> connect();

// Seconds a rank waits for a message before it declares a peer dead and aborts the job:
// REPLICA_DIST_TIMEOUT (seconds) or 600.
double dist_timeout_seconds();

// How a rank waits for its transfers (MpiCommunicator, NcclCommunicator): polls `done` until it returns true,
// yielding the core for the first second (other ranks, and NCCL's proxy thread, may share it), then sleeping 1 ms
// between polls. False once `timeout_s` has passed without it, with `waited` set: the caller then ends the job with
// no_progress_message.
bool poll_until(const std::function<bool()>& done, double timeout_s, double& waited);
// A dead or hanging peer: no progress for `waited` seconds waiting for `what` ("a barrier"), and how to resume.
std::string no_progress_message(double waited, const std::string& what, double timeout_s);

}  // namespace replica::distributed
