// Collectives over a Communicator, built from exchange(): all-gather, the global sum of squares, broadcast and
// gather-to-rank-0. The buffer is split into per-rank shards by `bounds` (W + 1 offsets, see shard_bounds).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "replica/dist/communicator.h"
#include "replica/kernels/backend.h"

namespace replica {

// Contiguous, balanced shards of a buffer of `total` floats, one per rank, starting on the clipping
// norm's block boundaries (kSquareSumBlock) so that the sharded norm adds the same partial sums in the
// same order as the unsharded one. Returns W + 1 offsets; shard r is [bounds[r], bounds[r + 1]).
std::vector<size_t> shard_bounds(size_t total, int world);

// Buffers named `buf` may be backend memory when the communicator moves device memory (NCCL); everything
// else is host memory.

// In place: every rank's shard of buf is copied to every other rank.
void all_gather(Communicator& comm, float* buf, const std::vector<size_t>& bounds);
void all_gather(Communicator& comm, double* buf, const std::vector<size_t>& bounds);

// Σ x² over a whole buffer, each rank contributing the block sums of its shard (backend memory, this rank's
// bounds[rank + 1] - bounds[rank] floats) over `comm` (host memory): the same double, bit for bit, as
// sum_of_squares(whole buffer) in optim/clip.h.
double sum_of_squares(Communicator& comm, Backend& backend, const float* shard, const std::vector<size_t>& bounds);

// Rank 0's `bytes` bytes at data are copied to every other rank.
void broadcast(Communicator& comm, void* data, size_t bytes);
// Rank 0's text to every rank.
void broadcast(Communicator& comm, std::string& text);

// True on every rank when flag is true on any rank (e.g. a stop signal that reached only some ranks).
bool any_rank(Communicator& comm, bool flag);

// Rank 0 receives every shard into `full` (bounds.back() floats; ignored elsewhere); other ranks send theirs.
void gather_to_root(Communicator& comm, const float* shard, const std::vector<size_t>& bounds, float* full);
// The reverse: every rank receives its shard of rank 0's `full` (ignored elsewhere) into `shard`.
void scatter_from_root(Communicator& comm, const float* full, const std::vector<size_t>& bounds, float* shard);

}  // namespace replica
