// Collectives from point-to-point exchanges (each rank talks to every other: W - 1 messages each way,
// (W - 1)/W of the buffer per rank, the bandwidth of a ring; latency is not a concern at CPU scale).
#include "replica/dist/collectives.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "replica/kernels/types.h"  // kSquareSumBlock

namespace replica {

std::vector<size_t> shard_bounds(size_t total, int world) {
  std::vector<size_t> bounds(size_t(world) + 1, total);
  const size_t blocks = (total + kSquareSumBlock - 1) / kSquareSumBlock;
  for (int r = 0; r < world; r++)
    bounds[size_t(r)] = std::min(total, blocks * size_t(r) / size_t(world) * kSquareSumBlock);
  return bounds;
}

template <class T>
static void all_gather_impl(Communicator& comm, T* buf, const std::vector<size_t>& bounds) {
  const int me = comm.rank();
  std::vector<Transfer> sends, recvs;
  for (int p = 0; p < comm.size(); p++) {
    if (p == me) continue;
    sends.push_back({p, buf + bounds[size_t(me)], (bounds[size_t(me) + 1] - bounds[size_t(me)]) * sizeof(T)});
    recvs.push_back({p, buf + bounds[size_t(p)], (bounds[size_t(p) + 1] - bounds[size_t(p)]) * sizeof(T)});
  }
  comm.exchange(sends, recvs);
}

void all_gather(Communicator& comm, float* buf, const std::vector<size_t>& bounds) {
  all_gather_impl(comm, buf, bounds);
}
void all_gather(Communicator& comm, double* buf, const std::vector<size_t>& bounds) {
  all_gather_impl(comm, buf, bounds);
}

double sum_of_squares(Communicator& comm, Backend& backend, const float* shard, const std::vector<size_t>& bounds) {
  // Shard r covers blocks [bounds[r] / B, ceil(bounds[r + 1] / B)): whole blocks, the last one maybe short.
  const size_t B = kSquareSumBlock;
  std::vector<size_t> block_bounds(bounds.size());
  for (size_t r = 0; r < bounds.size(); r++) block_bounds[r] = (bounds[r] + B - 1) / B;
  std::vector<double> blocks(block_bounds.back(), 0.0);
  const size_t me = size_t(comm.rank());
  const std::vector<double> mine = backend.block_sums_of_squares(shard, bounds[me + 1] - bounds[me]);
  std::copy(mine.begin(), mine.end(), blocks.begin() + ptrdiff_t(block_bounds[me]));
  all_gather(comm, blocks.data(), block_bounds);
  double total = 0.0;
  for (double s : blocks) total += s;
  return total;
}

void broadcast(Communicator& comm, void* data, size_t bytes) {
  if (comm.rank() != 0) {
    comm.exchange({}, {{0, data, bytes}});
    return;
  }
  std::vector<Transfer> sends;
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

void gather_to_root(Communicator& comm, const float* shard, const std::vector<size_t>& bounds, float* full) {
  const int me = comm.rank();
  const size_t n = bounds[size_t(me) + 1] - bounds[size_t(me)];
  if (me != 0) {
    comm.exchange({{0, const_cast<float*>(shard), n * sizeof(float)}}, {});
    return;
  }
  std::copy(shard, shard + n, full);
  std::vector<Transfer> recvs;
  for (int p = 1; p < comm.size(); p++)
    recvs.push_back({p, full + bounds[size_t(p)], (bounds[size_t(p) + 1] - bounds[size_t(p)]) * sizeof(float)});
  comm.exchange({}, recvs);
}

void scatter_from_root(Communicator& comm, const float* full, const std::vector<size_t>& bounds, float* shard) {
  const int me = comm.rank();
  const size_t n = bounds[size_t(me) + 1] - bounds[size_t(me)];
  if (me != 0) {
    comm.exchange({}, {{0, shard, n * sizeof(float)}});
    return;
  }
  std::copy(full, full + n, shard);
  std::vector<Transfer> sends;
  for (int p = 1; p < comm.size(); p++)
    sends.push_back({p, const_cast<float*>(full) + bounds[size_t(p)],
                     (bounds[size_t(p) + 1] - bounds[size_t(p)]) * sizeof(float)});
  comm.exchange(sends, {});
}

}  // namespace replica
