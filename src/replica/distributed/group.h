// A communicator over some ranks of another (a row or column of the device mesh, distributed/mesh.h): its ranks are
// numbered 0 … n − 1 in the order given and every message goes through the parent with the peer's parent rank.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "replica/distributed/communicator.h"

namespace replica::distributed {

class GroupCommunicator final : public Communicator {
 public:
  // `members`: parent ranks in group order, the parent's own rank among them. `parent` must outlive the group.
  GroupCommunicator(Communicator& parent, std::vector<int> members);

  int rank() const override { return rank_; }
  int size() const override { return int(members_.size()); }
  std::string name() const override { return parent_.name(); }
  void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) override;
  std::unique_ptr<PendingExchange> start_exchange(const std::vector<Send>& sends,
                                                  const std::vector<Recv>& recvs) override;  // the parent's
  // An empty message from every member to every other: it returns once all of them have reached it.
  void barrier() override;
  [[noreturn]] void abort(const std::string& message, int status) override;  // the parent's: ends the whole job

 private:
  // The messages with the parent's ranks for the peers.
  std::pair<std::vector<Send>, std::vector<Recv>> in_parent(const std::vector<Send>& sends,
                                                            const std::vector<Recv>& recvs) const;
  Communicator& parent_;
  std::vector<int> members_;
  int rank_ = -1;
};

}  // namespace replica::distributed
