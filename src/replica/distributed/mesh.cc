// Mesh: the world's ranks split into context-parallel groups of consecutive ranks and the data-parallel columns.
#include "replica/distributed/mesh.h"

#include "replica/core/error.h"

namespace replica::distributed {

static int checked_context(const Communicator& world, int context) {
  check(context >= 1 && world.size() % context == 0,
        "train.context_parallel={} must divide the number of ranks ({}): the mesh is data-parallel replicas × "
        "context-parallel ranks",
        context, world.size());
  return context;
}

static std::vector<int> column(const Communicator& world, int context) {  // ranks with this rank's context rank
  std::vector<int> ranks;
  for (int r = world.rank() % context; r < world.size(); r += context) ranks.push_back(r);
  return ranks;
}

static std::vector<int> row(const Communicator& world, int context) {  // this rank's context-parallel group
  std::vector<int> ranks;
  const int first = world.rank() / context * context;
  for (int r = first; r < first + context; r++) ranks.push_back(r);
  return ranks;
}

Mesh::Mesh(Communicator& world, int context)
    : data_(world, column(world, checked_context(world, context))), context_(world, row(world, context)) {}

}  // namespace replica::distributed
