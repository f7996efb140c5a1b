// The table of evaluation surfaces: a suite reads, runs and reports them in this order.
#include "replica/eval/surface.h"

namespace replica::eval {

// Each in its own file, eval/<name>_surface.cc.
const Surface& heldout_surface();
const Surface& perplexity_surface();
const Surface& tasks_surface();
const Surface& kl_surface();
const Surface& needle_surface();

const std::vector<const Surface*>& surfaces() {
  static const std::vector<const Surface*> table = {&heldout_surface(), &perplexity_surface(), &tasks_surface(),
                                                    &kl_surface(), &needle_surface()};
  return table;
}

}  // namespace replica::eval
