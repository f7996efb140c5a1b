// core/huge_pages: large buffers of the CPU backend and of the kernels' scratch ask for transparent huge pages before
// their first touch (the advice shows as "hg" among the mapping's VmFlags in /proc/self/smaps).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "replica/core/huge_pages.h"
#include "replica/kernels/backend.h"

namespace replica {
namespace {

// The VmFlags of the mapping of this process that holds `address`, or "" if none does.
std::string vm_flags_at(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-')
      inside = begin <= at && at < end;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

// The first 2 MiB boundary at or after p.
const void* first_huge_page(const void* p) {
  constexpr uintptr_t kHuge = uintptr_t(1) << 21;
  return reinterpret_cast<const void*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1));
}

// Where the advice can be seen: a kernel with transparent huge pages (it refuses MADV_HUGEPAGE without them) and an
// smaps with VmFlags.
bool advice_visible() {
  return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good() &&
         !vm_flags_at(reinterpret_cast<const void*>(&vm_flags_at)).empty();
}

TEST(CoreHugePages, TheBackendAdvisesItsLargeBuffersAndStillZeroesThem) {
  if (!advice_visible()) GTEST_SKIP() << "SKIPPED: no transparent huge pages, or no VmFlags in /proc/self/smaps";
  Backend& backend = cpu_backend();
  const size_t bytes = size_t(8) << 20;
  auto* p = static_cast<unsigned char*>(backend.allocate(bytes));
  const std::string flags = vm_flags_at(first_huge_page(p));
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  size_t nonzero = 0;
  for (size_t i = 0; i < bytes; i++) nonzero += p[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  backend.release(p);
}

TEST(CoreHugePages, AHugePageVectorIsAdvisedAndAligned) {
  if (!advice_visible()) GTEST_SKIP() << "SKIPPED: no transparent huge pages, or no VmFlags in /proc/self/smaps";
  HugePageVector<float> v(size_t(3) << 20, 1.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u);
  const std::string flags = vm_flags_at(first_huge_page(v.data()));
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  EXPECT_EQ(v.back(), 1.0f);
}

}  // namespace
}  // namespace replica
