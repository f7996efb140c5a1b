// Test helper: W ranks as W threads of one process, exchanging messages through shared mailboxes, so the
// distributed/ collectives and DataParallel can be tested at W = 2, 4 without mpirun.
#pragma once
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "replica/distributed/communicator.h"

namespace replica::distributed {

class ThreadGroup {
 public:
  explicit ThreadGroup(int world) : world_(world), boxes_(size_t(world * world)) {}

  // Runs body(comm) on `world` threads, one rank each, and joins them.
  void run(const std::function<void(Communicator&)>& body);

 private:
  struct Box {  // messages from one rank to another, in order
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<std::vector<char>> messages;
  };
  class Comm final : public Communicator {
   public:
    Comm(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_.world_; }
    std::string name() const override { return "threads"; }
    void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) override {
      for (const Send& t : sends) {
        Box& box = group_.box(rank_, t.peer);
        std::lock_guard lock(box.mutex);
        const char* bytes = static_cast<const char*>(t.data);
        box.messages.emplace_back(bytes, bytes + t.bytes);
        box.ready.notify_all();
      }
      for (const Recv& t : recvs) {
        Box& box = group_.box(t.peer, rank_);
        std::unique_lock lock(box.mutex);
        box.ready.wait(lock, [&] { return !box.messages.empty(); });
        if (box.messages.front().size() != t.bytes) throw std::runtime_error("message size mismatch");
        if (t.bytes > 0) std::memcpy(t.data, box.messages.front().data(), t.bytes);  // an empty shard may be null
        box.messages.pop_front();
      }
    }
    void barrier() override {}
    [[noreturn]] void abort(const std::string& message, int) override { throw std::runtime_error(message); }

   private:
    ThreadGroup& group_;
    int rank_;
  };
  Box& box(int from, int to) { return boxes_[size_t(from * world_ + to)]; }

  int world_;
  std::vector<Box> boxes_;
};

inline void ThreadGroup::run(const std::function<void(Communicator&)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world_; r++)
    threads.emplace_back([this, r, &body] {
      Comm comm(*this, r);
      body(comm);
    });
  for (std::thread& t : threads) t.join();
}

}  // namespace replica::distributed
