// Collectives from point-to-point exchanges (each rank talks to every other: W - 1 messages each way,
// (W - 1)/W of the buffer per rank, the bandwidth of a ring; latency is not a concern at CPU scale).
#include "replica/distributed/collectives.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace replica::distributed {

void all_gather(Communicator& comm, double* buf, const std::vector<size_t>& bounds) {
  const int me = comm.rank();
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  for (int p = 0; p < comm.size(); p++) {
    if (p == me) continue;
    sends.push_back({p, buf + bounds[size_t(me)], (bounds[size_t(me) + 1] - bounds[size_t(me)]) * sizeof(double)});
    recvs.push_back({p, buf + bounds[size_t(p)], (bounds[size_t(p) + 1] - bounds[size_t(p)]) * sizeof(double)});
  }
  comm.exchange(sends, recvs);
}

void broadcast(Communicator& comm, void* data, size_t bytes) {
  if (comm.rank() != 0) {
    comm.exchange({}, {{0, data, bytes}});
    return;
  }
  std::vector<Send> sends;
  for (int p = 1; p < comm.size(); p++) sends.push_back({p, data, bytes});
  comm.exchange(sends, {});
}

void broadcast(Communicator& comm, std::string& text) {
  uint64_t length = text.size();
  broadcast(comm, &length, sizeof length);
  text.resize(length);
  broadcast(comm, text.data(), length);
}

bool any_rank(Communicator& comm, bool flag) {
  if (comm.size() == 1) return flag;
  const size_t world = size_t(comm.size());
  std::vector<double> flags(world, 0.0);
  std::vector<size_t> bounds(world + 1);
  for (size_t r = 0; r <= world; r++) bounds[r] = r;
  flags[size_t(comm.rank())] = flag ? 1.0 : 0.0;
  all_gather(comm, flags.data(), bounds);
  return std::any_of(flags.begin(), flags.end(), [](double f) { return f != 0.0; });
}

}  // namespace replica::distributed
