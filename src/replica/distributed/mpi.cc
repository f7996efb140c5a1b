// MpiCommunicator: Isend/Irecv (messages over 1 GiB go in 1 GiB pieces, MPI counts being int) and a
// polling wait with a deadline.
#include "replica/distributed/mpi.h"

#include <fmt/core.h>
#include <mpi.h>

#include <chrono>
#include <set>

#include "replica/core/error.h"

namespace replica::distributed {

static constexpr size_t kMaxPiece = size_t(1) << 30;  // bytes per MPI message

static void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(fmt::format("{} failed: {}", call, std::string(text, size_t(length))));
}

MpiCommunicator::MpiCommunicator() : timeout_s_(dist_timeout_seconds()) {
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiCommunicator::~MpiCommunicator() { MPI_Finalize(); }

void MpiCommunicator::exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<MPI_Request> requests;
  std::vector<int> peers;  // of each request
  auto post = [&](const auto& t) {  // a Send or a Recv, in pieces MPI's int count can hold
    check(t.peer >= 0 && t.peer < size_ && t.peer != rank_, "mpi: rank {} cannot exchange with rank {} of {}",
          rank_, t.peer, size_);
    size_t at = 0;
    do {  // an empty message is still one message
      const size_t count = std::min(kMaxPiece, t.bytes - at);
      MPI_Request& r = requests.emplace_back();
      peers.push_back(t.peer);
      if constexpr (std::is_same_v<std::decay_t<decltype(t)>, Send>)
        check_mpi(MPI_Isend(static_cast<const char*>(t.data) + at, int(count), MPI_BYTE, t.peer, 0, MPI_COMM_WORLD, &r),
                  "MPI_Isend");
      else
        check_mpi(MPI_Irecv(static_cast<char*>(t.data) + at, int(count), MPI_BYTE, t.peer, 0, MPI_COMM_WORLD, &r),
                  "MPI_Irecv");
      at += count;
    } while (at < t.bytes);
  };
  for (const Recv& t : recvs) post(t);
  for (const Send& t : sends) post(t);
  wait(requests.data(), peers);
  comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void MpiCommunicator::barrier() {
  const auto start = std::chrono::steady_clock::now();
  MPI_Request request;
  check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  wait(&request, {-1});
  comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Polls until every request completes (poll_until), aborting the job once timeout_s_ has passed, naming the ranks
// whose messages are still outstanding.
void MpiCommunicator::wait(void* requests, const std::vector<int>& peers) {
  auto* reqs = static_cast<MPI_Request*>(requests);
  const int count = int(peers.size());
  double waited = 0;
  const bool done = poll_until(
      [&] {
        int all = 0;
        check_mpi(MPI_Testall(count, reqs, &all, MPI_STATUSES_IGNORE), "MPI_Testall");
        return all != 0;
      },
      timeout_s_, waited);
  if (done) return;
  std::set<int> late;
  for (int i = 0; i < count; i++) {
    int complete = 0;
    MPI_Request_get_status(reqs[i], &complete, MPI_STATUS_IGNORE);
    if (!complete) late.insert(peers[size_t(i)]);
  }
  std::string who = late.count(-1) ? "a barrier" : "messages from/to rank(s)";
  for (int p : late)
    if (p >= 0) who += fmt::format(" {}", p);
  abort(no_progress_message(waited, who, timeout_s_), 3);
}

void MpiCommunicator::abort(const std::string& message, int status) {
  fmt::print(stderr, "replica: rank {} of {}: error: {}\n", rank_, size_, message);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return; this satisfies [[noreturn]]
}

}  // namespace replica::distributed
