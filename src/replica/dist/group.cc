// GroupCommunicator: group ranks translated to the parent's, the time spent counted on both.
#include "replica/dist/group.h"

#include <chrono>
#include <cstdlib>

#include "replica/core/error.h"

namespace replica::dist {

GroupCommunicator::GroupCommunicator(Communicator& parent, std::vector<int> members)
    : parent_(parent), members_(std::move(members)) {
  for (size_t i = 0; i < members_.size(); i++) {
    check(members_[i] >= 0 && members_[i] < parent.size(), "communicator group: rank {} outside the {} ranks",
          members_[i], parent.size());
    if (members_[i] == parent.rank()) rank_ = int(i);
  }
  check(rank_ >= 0, "communicator group: rank {} is not a member of its own group", parent.rank());
}

void GroupCommunicator::exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  const auto start = std::chrono::steady_clock::now();
  auto parent_rank = [&](int peer) {
    check(peer >= 0 && peer < size() && peer != rank_, "communicator group: rank {} cannot exchange with rank {} of {}",
          rank_, peer, size());
    return members_[size_t(peer)];
  };
  std::vector<Send> parent_sends;
  std::vector<Recv> parent_recvs;
  for (const Send& s : sends) parent_sends.push_back({parent_rank(s.peer), s.data, s.bytes});
  for (const Recv& r : recvs) parent_recvs.push_back({parent_rank(r.peer), r.data, r.bytes});
  parent_.exchange(parent_sends, parent_recvs);
  comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void GroupCommunicator::barrier() {
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  for (int p = 0; p < size(); p++)
    if (p != rank_) {
      sends.push_back({p, nullptr, 0});
      recvs.push_back({p, nullptr, 0});
    }
  exchange(sends, recvs);
}

void GroupCommunicator::abort(const std::string& message, int status) {
  parent_.abort(message, status);
  std::_Exit(status);  // not reached; the parent's abort does not return
}

}  // namespace replica::dist
