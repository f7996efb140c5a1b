// GroupCommunicator: group ranks translated to the parent's, the time spent counted on both.
#include "replica/distributed/group.h"

#include <chrono>
#include <cstdlib>

#include "replica/core/error.h"

namespace replica::distributed {

static double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {
// The parent's exchange in flight, the time its wait() takes counted on the group too.
class CountedWait final : public PendingExchange {
 public:
  CountedWait(std::unique_ptr<PendingExchange> inner, double& seconds) : inner_(std::move(inner)), seconds_(seconds) {}
  void wait() override {
    const auto start = std::chrono::steady_clock::now();
    inner_->wait();
    seconds_ += seconds_since(start);
  }

 private:
  std::unique_ptr<PendingExchange> inner_;
  double& seconds_;
};
}  // namespace

GroupCommunicator::GroupCommunicator(Communicator& parent, std::vector<int> members)
    : parent_(parent), members_(std::move(members)) {
  for (size_t i = 0; i < members_.size(); i++) {
    check(members_[i] >= 0 && members_[i] < parent.size(), "communicator group: rank {} outside the {} ranks",
          members_[i], parent.size());
    if (members_[i] == parent.rank()) rank_ = int(i);
  }
  check(rank_ >= 0, "communicator group: rank {} is not a member of its own group", parent.rank());
}

std::pair<std::vector<Send>, std::vector<Recv>> GroupCommunicator::in_parent(const std::vector<Send>& sends,
                                                                              const std::vector<Recv>& recvs) const {
  auto parent_rank = [&](int peer) {
    check(peer >= 0 && peer < size() && peer != rank_, "communicator group: rank {} cannot exchange with rank {} of {}",
          rank_, peer, size());
    return members_[size_t(peer)];
  };
  std::pair<std::vector<Send>, std::vector<Recv>> messages;
  for (const Send& s : sends) messages.first.push_back({parent_rank(s.peer), s.data, s.bytes});
  for (const Recv& r : recvs) messages.second.push_back({parent_rank(r.peer), r.data, r.bytes});
  return messages;
}

void GroupCommunicator::exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  const auto start = std::chrono::steady_clock::now();
  const auto [parent_sends, parent_recvs] = in_parent(sends, recvs);
  parent_.exchange(parent_sends, parent_recvs);
  comm_seconds_ += seconds_since(start);
}

std::unique_ptr<PendingExchange> GroupCommunicator::start_exchange(const std::vector<Send>& sends,
                                                                   const std::vector<Recv>& recvs) {
  const auto [parent_sends, parent_recvs] = in_parent(sends, recvs);
  return std::make_unique<CountedWait>(parent_.start_exchange(parent_sends, parent_recvs), comm_seconds_);
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

}  // namespace replica::distributed
