// The fixed reduction tree over the micro-batches of a global batch, which makes the sum independent of
// how many ranks computed it. Micro-batch c of n holds global rows c, c + n, c + 2n, ... (rows ≡ c mod n);
// node (c, m) is the set of micro-batches ≡ c (mod m), and it is the sum of its two halves (c, 2m) and
// (c + m, 2m) until one micro-batch is left. Rank r of W (W a power of two dividing n) owns exactly the
// subtree (r, W): its rows are global rows ≡ r (mod W), the row[r::W] slice. So every rank sums its
// subtree locally, the ranks combine the top log2(W) levels, and each float of the result is the same
// sequence of additions for W = 1, 2, 4, ... (float addition is commutative, so which side holds the
// partial sum does not matter). For other W the order is still fixed, but differs from W = 1.
#pragma once
#include <cstdint>
#include <functional>

namespace replica {

// Sums n slots in place: calls add(dst, src) (slot dst += slot src) in the tree's order; slot 0 ends up
// holding the total.
void tree_reduce(int64_t n, const std::function<void(int64_t dst, int64_t src)>& add);

// The same tree with leaves produced on the fly into a stack of buffers: leaf(c, d) writes leaf c into
// buffer d, add(d) adds buffer d + 1 into buffer d. Buffer 0 ends up holding the total; at most
// tree_depth(n) buffers are used.
void tree_accumulate(int64_t n, const std::function<void(int64_t leaf, int depth)>& leaf,
                     const std::function<void(int depth)>& add);
int tree_depth(int64_t n);  // 1 + floor(log2 n)

}  // namespace replica
