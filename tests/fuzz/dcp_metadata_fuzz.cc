// Fuzzes torch.distributed.checkpoint's .metadata: the restricted unpickler (opcodes, memo, the allow-list of
// globals) and the Metadata interpreted from its tree (sizes, chunk tiling, storage_data), then a read of every
// tensor it declares, which must fail cleanly on the .distcp files the directory does not have.
#include <filesystem>
#include <vector>

#include "fuzz_input.h"
#include "replica/ckpt/dcp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  static const std::string dir = [] {
    const std::string d = fuzz::scratch_dir() + "/model_and_optim";
    std::filesystem::create_directories(d);
    return d;
  }();
  fuzz::write_input("model_and_optim/.metadata", data, size);
  fuzz::expect_only_replica_errors([&] {
    const ckpt::DcpCheckpoint dcp(dir);
    for (const auto& entry : dcp.tensors()) {
      const ckpt::DcpTensor& tensor = entry.second;
      if (tensor.numel() > (1u << 20)) continue;
      std::vector<float> values(tensor.numel());
      fuzz::expect_only_replica_errors([&] { dcp.read_f32(entry.first, tensor.size, values.data()); });
    }
  });
  return 0;
}
