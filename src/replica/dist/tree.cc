// The residue tree: node (c, m) covers the slots ≡ c (mod m) below n.
#include "replica/dist/tree.h"

#include <bit>

namespace replica {

static void reduce_node(int64_t c, int64_t m, int64_t n, const std::function<void(int64_t, int64_t)>& add) {
  if (c + m >= n) return;  // a single slot
  reduce_node(c, 2 * m, n, add);
  reduce_node(c + m, 2 * m, n, add);
  add(c, c + m);
}

void tree_reduce(int64_t n, const std::function<void(int64_t dst, int64_t src)>& add) { reduce_node(0, 1, n, add); }

static void accumulate_node(int64_t c, int64_t m, int64_t n, int depth,
                            const std::function<void(int64_t, int)>& leaf, const std::function<void(int)>& add) {
  if (c + m >= n) {
    leaf(c, depth);
    return;
  }
  accumulate_node(c, 2 * m, n, depth, leaf, add);
  accumulate_node(c + m, 2 * m, n, depth + 1, leaf, add);
  add(depth);
}

void tree_accumulate(int64_t n, const std::function<void(int64_t leaf, int depth)>& leaf,
                     const std::function<void(int depth)>& add) {
  accumulate_node(0, 1, n, 0, leaf, add);
}

// Leaf c sits at depth popcount(c) (one per right turn), and the largest popcount below n is
// bit_width(n) - 1.
int tree_depth(int64_t n) { return int(std::bit_width(uint64_t(n))); }

}  // namespace replica
