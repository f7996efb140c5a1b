// The device mesh: W ranks as W / N data-parallel replicas × N context-parallel ranks, the context dimension
// innermost as in OLMo-core's build_world_mesh, so a context-parallel group is N consecutive ranks (one node of
// eight GPUs in AI2's stage 3: DP 32 × CP 8). Parameters stay sharded over all W ranks (OLMo-core's dp_cp mesh).
#pragma once
#include "replica/distributed/group.h"

namespace replica::distributed {

class Mesh {
 public:
  // Raises replica::Error unless `context` (train.context_parallel) divides world.size().
  Mesh(Communicator& world, int context);

  int context_size() const { return context_.size(); }  // N
  int context_rank() const { return context_.rank(); }  // this rank's slice of every sequence
  int data_rank() const { return data_.rank(); }
  int data_size() const { return data_.size(); }
  // The data-parallel ranks that read different instances: the loader, the global order and the label counts see
  // only these (W / N of them); rank r of the world is data rank r / N.
  Communicator& data() { return data_; }
  Communicator& context() { return context_; }  // this rank's context-parallel group

 private:
  GroupCommunicator data_, context_;
};

}  // namespace replica::distributed
