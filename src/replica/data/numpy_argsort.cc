// numpy 1.24's aquicksort_ and aheapsort_ (numpy/core/src/npysort/), transcribed pointer for pointer.
#include "replica/data/numpy_argsort.h"

#include <bit>
#include <utility>

namespace replica::data {

namespace {

constexpr int64_t kSmallQuicksort = 15;  // SMALL_QUICKSORT: partitions of at most 16 go to insertion sort

// aheapsort_'s sift: moves a[i]'s hole down the heap a[1..n] to where `tmp` belongs, and puts it there.
void sift_down(const int64_t* v, int64_t* a, int64_t i, int64_t n, int64_t tmp) {
  for (int64_t j = 2 * i; j <= n;) {
    if (j < n && v[a[j]] < v[a[j + 1]]) j += 1;
    if (!(v[tmp] < v[a[j]])) break;
    a[i] = a[j];
    i = j;
    j += j;
  }
  a[i] = tmp;
}

// aheapsort_: `tosort` is read 1-based (a = tosort - 1), as in numpy.
void argheapsort(const int64_t* v, int64_t* tosort, int64_t n) {
  int64_t* a = tosort - 1;
  for (int64_t l = n >> 1; l > 0; --l) sift_down(v, a, l, n, a[l]);
  for (; n > 1;) {
    const int64_t tmp = a[n];
    a[n] = a[1];
    n -= 1;
    sift_down(v, a, 1, n, tmp);
  }
}

}  // namespace

std::vector<int64_t> numpy_argheapsort(std::span<const int64_t> keys) {
  std::vector<int64_t> order(keys.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = int64_t(i);
  if (!order.empty()) argheapsort(keys.data(), order.data(), int64_t(order.size()));
  return order;
}

std::vector<int64_t> numpy_argsort(std::span<const int64_t> keys) {
  const int64_t num = int64_t(keys.size());
  std::vector<int64_t> order(keys.size());
  for (int64_t i = 0; i < num; i++) order[size_t(i)] = i;
  if (num < 2) return order;
  const int64_t* v = keys.data();
  int64_t* pl = order.data();
  int64_t* pr = pl + num - 1;
  int64_t* stack[128];  // PYA_QS_STACK: the larger partition is pushed, so the depth stays below log2(n)
  int64_t** sptr = stack;
  int depth[128];
  int* psdepth = depth;
  int cdepth = (std::bit_width(uint64_t(num)) - 1) * 2;  // npy_get_msb(num) * 2
  int64_t *pm, *pi, *pj, *pk, vi, vp;
  for (;;) {
    if (cdepth < 0) {
      argheapsort(v, pl, pr - pl + 1);
      goto stack_pop;
    }
    while ((pr - pl) > kSmallQuicksort) {
      // median of three, then partition around it
      pm = pl + ((pr - pl) >> 1);
      if (v[*pm] < v[*pl]) std::swap(*pm, *pl);
      if (v[*pr] < v[*pm]) std::swap(*pr, *pm);
      if (v[*pm] < v[*pl]) std::swap(*pm, *pl);
      vp = v[*pm];
      pi = pl;
      pj = pr - 1;
      std::swap(*pm, *pj);
      for (;;) {
        do ++pi;
        while (v[*pi] < vp);
        do --pj;
        while (vp < v[*pj]);
        if (pi >= pj) break;
        std::swap(*pi, *pj);
      }
      pk = pr - 1;
      std::swap(*pi, *pk);
      // push the larger partition on the stack
      if (pi - pl < pr - pi) {
        *sptr++ = pi + 1;
        *sptr++ = pr;
        pr = pi - 1;
      } else {
        *sptr++ = pl;
        *sptr++ = pi - 1;
        pl = pi + 1;
      }
      *psdepth++ = --cdepth;
    }
    // insertion sort
    for (pi = pl + 1; pi <= pr; ++pi) {
      vi = *pi;
      vp = v[vi];
      pj = pi;
      pk = pi - 1;
      while (pj > pl && vp < v[*pk]) *pj-- = *pk--;
      *pj = vi;
    }
  stack_pop:
    if (sptr == stack) break;
    pr = *(--sptr);
    pl = *(--sptr);
    cdepth = *(--psdepth);
  }
  return order;
}

}  // namespace replica::data
