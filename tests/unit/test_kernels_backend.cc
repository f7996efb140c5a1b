// kernels/backend: backend memory on the CPU, host mirrors, a clear error where CUDA cannot be had, and the
// per-operation profile.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "replica/core/error.h"
#include "replica/kernels/backend.h"
#include "replica/kernels/profile.h"

namespace replica {
namespace {

TEST(Backend, CpuMemoryIsHostMemoryZeroFilledAndMovable) {
  Backend& cpu = cpu_backend();
  EXPECT_EQ(&cpu, &backend_for(Device::cpu));
  EXPECT_TRUE(cpu.host_memory());
  DeviceArray<float> a(cpu, 1000);
  for (size_t i = 0; i < a.size(); i++) ASSERT_EQ(a.data()[i], 0.0f);
  a.data()[7] = 3.0f;
  DeviceArray<float> b = std::move(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b.data()[7], 3.0f);
  cpu.add(b.data(), b.data(), b.data(), int64_t(b.size()));
  cpu.scale(b.data(), b.size(), 0.5f);
  EXPECT_EQ(b.data()[7], 3.0f);
}

TEST(Backend, HostMirrorOfCpuMemoryIsTheMemoryItself) {
  DeviceArray<float> a(cpu_backend(), 16);
  HostMirror mirror(cpu_backend(), a.data(), a.size());
  EXPECT_EQ(mirror.data(), a.data());
  mirror.data()[3] = 1.5f;
  mirror.upload();
  EXPECT_EQ(a.data()[3], 1.5f);
}

TEST(Backend, HostFloatsOnTheCpuBackendAreNotCopied) {
  const std::vector<float> host(100, 2.0f);
  EXPECT_EQ(OnBackend(cpu_backend(), host).data(), host.data());
}

TEST(Backend, DeviceNamesParseAndBadNamesAreRefused) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu);
  EXPECT_EQ(parse_device("cuda"), Device::cuda);
  EXPECT_STREQ(device_name(Device::cuda), "cuda");
  EXPECT_THROW(parse_device("gpu"), Error);
}

TEST(Backend, CudaWithoutAGpuIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is visible: the CUDA backend is available here";
  try {
    backend_for(Device::cuda);
    FAIL() << "backend_for(cuda) succeeded without a GPU";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_TRUE(message.find("device=cuda") != std::string::npos) << message;
  }
}

TEST(Profile, SumsTakesByOperationAndTabulatesPerStepSlowestFirst) {
  ProfileSum sum;
  EXPECT_TRUE(sum.empty());
  sum.add({{"add", 2, 1.0}, {"gemm 8×8×8 NT", 1, 3.0}});
  sum.add({{"gemm 8×8×8 NT", 1, 5.0}, {"add", 2, 1.0}});
  const std::string table = sum.table(2, 10.0);  // 2 steps of 10 ms: 6 ms of operations per step
  EXPECT_NE(table.find("| gemm 8×8×8 NT | 1 | 4.00 | 40.0 % |\n| add | 2 | 1.00 | 10.0 % |\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| all operations |  | 5.00 | 50.0 % |"), std::string::npos) << table;
  EXPECT_NE(table.find("| the device waiting for the host |  | 5.00 | 50.0 % |"), std::string::npos) << table;
}

TEST(Backend, CpuDoesNotProfile) {
  EXPECT_FALSE(cpu_backend().profile(true));
  EXPECT_TRUE(cpu_backend().profile(false));
  EXPECT_TRUE(cpu_backend().take_profile().empty());
}

TEST(Backend, CudaProfileTimesEveryCallByOperationAndShape) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU visible (CI runs this on the CPU emulation of CUDA)";
  Backend& gpu = backend_for(Device::cuda);
  DeviceArray<float> a(gpu, 64), b(gpu, 64), c(gpu, 64);
  ASSERT_TRUE(gpu.profile(true));
  gpu.add(c.data(), a.data(), b.data(), 64);
  gpu.add(c.data(), c.data(), b.data(), 64);
  gpu.gemm(false, true, 4, 8, 8, a.data(), 8, b.data(), 8, c.data(), 8, false, Precision::fp32, nullptr, nullptr);
  const std::vector<OpTime> ops = gpu.take_profile();
  auto calls = [&](const std::string& op) {
    for (const OpTime& t : ops)
      if (t.op == op) return t.calls;
    return int64_t(0);
  };
  EXPECT_EQ(calls("add"), 2);
  EXPECT_EQ(calls("gemm 4×8×8 NT"), 1);
  EXPECT_EQ(ops.size(), 2u);
  for (const OpTime& t : ops) EXPECT_GE(t.ms, 0.0) << t.op;
  EXPECT_TRUE(gpu.take_profile().empty()) << "a take empties the profile";
  gpu.add(c.data(), a.data(), b.data(), 64);
  ASSERT_TRUE(gpu.profile(false));
  gpu.add(c.data(), a.data(), b.data(), 64);
  EXPECT_TRUE(gpu.take_profile().empty()) << "stopping drops what was not taken, and nothing more is timed";
}

}  // namespace
}  // namespace replica
