// Collectives over a Communicator, built from exchange(): all-gather, broadcast and any_rank. (DataParallel's own
// exchanges follow its ShardLayout: distributed/data_parallel.cc.)
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "replica/distributed/communicator.h"

namespace replica::distributed {

// Buffers named `buf` may be backend memory when the communicator moves device memory (NCCL); everything
// else is host memory.

// In place: every rank's shard of buf, [bounds[rank], bounds[rank + 1]), is copied to every other rank.
void all_gather(Communicator& comm, double* buf, const std::vector<size_t>& bounds);

// Rank 0's `bytes` bytes at data are copied to every other rank.
void broadcast(Communicator& comm, void* data, size_t bytes);
// Rank 0's text to every rank.
void broadcast(Communicator& comm, std::string& text);

// True on every rank when flag is true on any rank (e.g. a stop signal that reached only some ranks).
bool any_rank(Communicator& comm, bool flag);

}  // namespace replica::distributed
