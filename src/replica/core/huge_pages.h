// Transparent huge pages for large buffers. Attention reads its activations a row of one head at a time (a stride of
// H · D floats: a new 4 KiB page per row) and the LM head streams a few hundred MB of exps per step, so with 4 KiB pages
// the TLB misses often, and in a virtual machine each miss is a two-level page walk. Linux backs a region with 2 MiB
// pages where asked (madvise, MADV_HUGEPAGE) when /sys/kernel/mm/transparent_hugepage/enabled is "madvise", the
// default of many distributions; "always" needs no asking, "never" refuses. The tiny model's bf16 step: ~3 % faster
// on the 2-core VM (bench/RESULTS.md, issue 34).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace replica {

// Asks for the whole 2 MiB pages inside [p, p + bytes) to be huge pages. To take effect everywhere, call it before
// the memory is first touched. A request the kernel declines changes nothing: the pages stay 4 KiB.
void advise_huge_pages(void* p, size_t bytes);

// An allocator that asks for huge pages before a vector's elements are first written: for the kernels' large scratch
// buffers, kept between calls. 64-byte aligned (a cache line).
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = ::operator new (n * sizeof(T), std::align_val_t{64});
    advise_huge_pages(p, n * sizeof(T));
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{64}); }
  bool operator==(const HugePageAllocator&) const = default;
};

template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace replica
