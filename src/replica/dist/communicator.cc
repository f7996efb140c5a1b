// The exchange that finishes at once (Communicator's start_exchange), the single-process communicator, the launcher
// check, the timeout setting and the local rank.
#include "replica/dist/communicator.h"

#include <fmt/core.h>

#include <climits>
#include <cstdlib>

#include "replica/core/error.h"
#include "replica/dist/mpi.h"

namespace replica::dist {

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
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK")) return std::make_unique<MpiCommunicator>();
  return std::make_unique<LocalCommunicator>();
}

double dist_timeout_seconds() {
  const char* text = std::getenv("REPLICA_DIST_TIMEOUT");
  if (!text || !*text) return 600.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  check(*end == '\0' && seconds > 0, "REPLICA_DIST_TIMEOUT='{}': expected a positive number of seconds", text);
  return seconds;
}

int local_rank() {
  const char* text = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long rank = std::strtol(text, &end, 10);
  check(*end == '\0' && rank >= 0 && rank <= INT_MAX, "OMPI_COMM_WORLD_LOCAL_RANK='{}': expected a rank >= 0",
        text);
  return int(rank);
}

}  // namespace replica::dist
