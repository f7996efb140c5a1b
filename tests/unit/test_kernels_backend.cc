// kernels/backend: backend memory on the CPU, host mirrors, a clear error where CUDA cannot be had, and the
// per-operation profile.
#include <gtest/gtest.h>

#include <cmath>
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
  sum.add({{"add", 2, 1.0, 3e9}, {"gemm 8×8×8 NT", 1, 3.0}});
  sum.add({{"gemm 8×8×8 NT", 1, 5.0}, {"add", 2, 1.0, 1e9}});
  const std::string table = sum.table(2, 10.0);  // 2 steps of 10 ms: 6 ms of operations per step
  // add: 2 GB per step in 1 ms = 2000 GB/s; the GEMM's bytes are not counted.
  EXPECT_NE(table.find("| gemm 8×8×8 NT | 1 | 4.00 | 40.0 % |  |\n| add | 2 | 1.00 | 10.0 % | 2000 |\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| all operations |  | 5.00 | 50.0 % |  |"), std::string::npos) << table;
  EXPECT_NE(table.find("| the device waiting for the host |  | 5.00 | 50.0 % |  |"), std::string::npos) << table;
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
  for (const OpTime& t : ops)  // add's bytes by its contract (two reads, one write of 64 floats, twice); GEMMs: none
    EXPECT_EQ(t.bytes, t.op == "add" ? 2 * 64 * 12 : 0) << t.op;
  EXPECT_EQ(ops.size(), 2u);
  for (const OpTime& t : ops) EXPECT_GE(t.ms, 0.0) << t.op;
  EXPECT_TRUE(gpu.take_profile().empty()) << "a take empties the profile";
  gpu.add(c.data(), a.data(), b.data(), 64);
  ASSERT_TRUE(gpu.profile(false));
  gpu.add(c.data(), a.data(), b.data(), 64);
  EXPECT_TRUE(gpu.take_profile().empty()) << "stopping drops what was not taken, and nothing more is timed";
}

TEST(Backend, AttentionKernelNamesParseAndBadNamesAreRefused) {
  for (AttentionKernel k : {AttentionKernel::automatic, AttentionKernel::mma, AttentionKernel::wgmma,
                            AttentionKernel::fp32, AttentionKernel::cpu_bf16})
    EXPECT_EQ(parse_attention_kernel(attention_kernel_name(k)), k);
  EXPECT_STREQ(attention_kernel_name(AttentionKernel::automatic), "auto");
  try {
    parse_attention_kernel("wmma");
    FAIL() << "wmma parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'auto', 'mma', 'wgmma', 'fp32' or 'cpu_bf16'"), std::string::npos)
        << e.what();
  }
}

TEST(Backend, CpuAttentionIsCpuBf16OrFp32AndTensorCoreKernelsNeedCuda) {
  EXPECT_EQ(cpu_backend().resolve_attention(AttentionKernel::automatic), AttentionKernel::cpu_bf16);
  EXPECT_EQ(cpu_backend().resolve_attention(AttentionKernel::fp32), AttentionKernel::fp32);
  EXPECT_EQ(cpu_backend().resolve_attention(AttentionKernel::cpu_bf16), AttentionKernel::cpu_bf16);
  for (AttentionKernel k : {AttentionKernel::mma, AttentionKernel::wgmma}) {
    try {
      cpu_backend().resolve_attention(k);
      FAIL() << attention_kernel_name(k) << " accepted on the CPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("needs train.device=cuda"), std::string::npos) << e.what();
    }
  }
}

// attention_forward's out on `backend` for random q, k, v of shape s, with `kernel`.
std::vector<float> attention_out(Backend& backend, const AttentionShape& s, Precision p, AttentionKernel kernel) {
  const size_t nq = size_t(s.B * s.T * s.H * s.D), nk = size_t(s.B * s.T * s.K * s.D);
  std::vector<float> host(nq + 2 * nk);
  for (size_t i = 0; i < host.size(); i++) host[i] = float(int((i * 2654435761u >> 16) % 2001) - 1000) / 500.0f;
  DeviceArray<float> qkv(backend, host.size()), out(backend, nq), lse(backend, size_t(s.B * s.H * s.T));
  backend.to_device(qkv.data(), host.data(), host.size() * sizeof(float));
  backend.attention_forward(out.data(), lse.data(), qkv.data(), qkv.data() + nq, qkv.data() + nq + nk, s, {}, p,
                            kernel);
  std::vector<float> result(nq);
  backend.to_host(result.data(), out.data(), nq * sizeof(float));
  return result;
}

TEST(Backend, CpuBf16AttentionRoundsItsOperandsInBf16Only) {
  const AttentionShape s{1, 40, 2, 1, 16, 0};
  const std::vector<float> fp32 = attention_out(cpu_backend(), s, Precision::fp32, AttentionKernel::fp32);
  EXPECT_EQ(attention_out(cpu_backend(), s, Precision::bf16, AttentionKernel::fp32), fp32)
      << "fp32 chosen: bf16 calls run the fp32 kernel";
  EXPECT_EQ(attention_out(cpu_backend(), s, Precision::fp32, AttentionKernel::cpu_bf16), fp32)
      << "fp32 precision runs the fp32 kernel";
  const std::vector<float> bf16 = attention_out(cpu_backend(), s, Precision::bf16, AttentionKernel::automatic);
  EXPECT_EQ(attention_out(cpu_backend(), s, Precision::bf16, AttentionKernel::cpu_bf16), bf16) << "auto is cpu_bf16";
  EXPECT_NE(bf16, fp32) << "cpu_bf16 chosen: bf16 calls round their operands";
  for (size_t i = 0; i < fp32.size(); i++) ASSERT_NEAR(bf16[i], fp32[i], 2e-2 * (1 + std::fabs(fp32[i]))) << i;
}

TEST(Backend, CudaAttentionKernelIsTheOneChosen) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU visible (CI runs this on the CPU emulation of CUDA)";
  Backend& gpu = backend_for(Device::cuda);
  const AttentionShape tensor_core{1, 40, 2, 1, 16, 0}, odd_head{1, 40, 2, 1, 8, 0};
  using enum AttentionKernel;
  EXPECT_EQ(gpu.resolve_attention(fp32), fp32);
  const std::vector<float> exact = attention_out(gpu, tensor_core, Precision::fp32, fp32);
  EXPECT_EQ(attention_out(gpu, tensor_core, Precision::bf16, fp32), exact)
      << "fp32 chosen: bf16 calls run the fp32 kernel";
  const std::vector<float> exact_odd = attention_out(gpu, odd_head, Precision::fp32, fp32);

  EXPECT_EQ(gpu.resolve_attention(automatic), mma);
  const std::vector<float> tensor_cores = attention_out(gpu, tensor_core, Precision::bf16, mma);
  EXPECT_NE(tensor_cores, exact) << "mma chosen: bf16 calls round their operands on tensor cores";
  for (size_t i = 0; i < tensor_cores.size(); i++) ASSERT_NEAR(tensor_cores[i], exact[i], 2e-2) << i;
  EXPECT_EQ(attention_out(gpu, tensor_core, Precision::bf16, automatic), tensor_cores) << "automatic is mma";
  EXPECT_EQ(attention_out(gpu, tensor_core, Precision::fp32, mma), exact) << "fp32 calls stay fp32";
  EXPECT_EQ(attention_out(gpu, odd_head, Precision::bf16, mma), exact_odd) << "a head size mma lacks falls back to fp32";

  EXPECT_EQ(gpu.resolve_attention(wgmma), wgmma);
  EXPECT_EQ(gpu.resolve_attention(mma), mma);
}

}  // namespace
}  // namespace replica
