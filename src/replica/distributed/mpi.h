// Open MPI communicator: MPI_COMM_WORLD, non-blocking point-to-point messages completed by polling, so a
// peer that dies or hangs turns into a clear error and an MPI_Abort after REPLICA_DIST_TIMEOUT seconds
// instead of a hang.
#pragma once
#include "replica/distributed/communicator.h"

namespace replica::distributed {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator();            // MPI_Init_thread (funneled: only the main thread calls MPI)
  ~MpiCommunicator() override;  // MPI_Finalize
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) override;
  void barrier() override;
  [[noreturn]] void abort(const std::string& message, int status) override;

 private:
  // requests: MPI_Request[peers.size()], each with its peer's rank (-1: a collective such as a barrier).
  void wait(void* requests, const std::vector<int>& peers);
  int rank_ = 0, size_ = 1;
  double timeout_s_;
};

}  // namespace replica::distributed
