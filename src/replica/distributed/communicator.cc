// The exchange that finishes at once (Communicator's start_exchange), the single-process communicator, the choice
// between them by the launch, and the timeout setting and the wait it bounds.
#include "replica/distributed/communicator.h"

#include <fmt/core.h>
#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "replica/core/error.h"
#include "replica/distributed/launch.h"
#include "replica/distributed/mpi.h"

namespace replica::distributed {

namespace {
class Done final : public PendingExchange {
 public:
  void wait() override {}
};
}  // namespace

std::unique_ptr<PendingExchange> Communicator::start_exchange(const std::vector<Send>& sends,
                                                              const std::vector<Recv>& recvs) {
  exchange(sends, recvs);
  return std::make_unique<Done>();
}

void LocalCommunicator::exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  check(sends.empty() && recvs.empty(), "local communicator: a single process has no peers to exchange with");
}

void LocalCommunicator::abort(const std::string& message, int status) {
  fmt::print(stderr, "replica: error: {}\n", message);
  std::exit(status);
}

std::unique_ptr<Communicator> connect() {
  const Launch launch = detect_launch();
  check_launch(launch);
  std::unique_ptr<Communicator> comm;
  if (launch.mpi)
    comm = std::make_unique<MpiCommunicator>();
  else
    comm = std::make_unique<LocalCommunicator>();
  check_world(launch, comm->rank(), comm->size());
  return comm;
}

double dist_timeout_seconds() {
  const char* text = std::getenv("REPLICA_DIST_TIMEOUT");
  if (!text || !*text) return 600.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  check(*end == '\0' && seconds > 0, "REPLICA_DIST_TIMEOUT='{}': expected a positive number of seconds", text);
  return seconds;
}

bool poll_until(const std::function<bool()>& done, double timeout_s, double& waited) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (done()) return true;
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s) return false;
    if (waited < 1.0)
      sched_yield();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string no_progress_message(double waited, const std::string& what, double timeout_s) {
  return fmt::format(
      "no progress for {:.0f} s waiting for {} (REPLICA_DIST_TIMEOUT={:g}): a rank died or hangs; "
      "ending the job. Restart it to resume from the last complete checkpoint.",
      waited, what, timeout_s);
}

}  // namespace replica::distributed
