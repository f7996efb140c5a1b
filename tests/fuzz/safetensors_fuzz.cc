// Fuzzes the safetensors reader: header, dtypes, shapes and data offsets, then every tensor read as fp32.
#include <vector>

#include "fuzz_input.h"
#include "replica/ckpt/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  const std::string path = fuzz::write_input("model.safetensors", data, size);
  fuzz::expect_only_replica_errors([&] {
    const ckpt::SafetensorsReader reader(path);
    for (const auto& [name, info] : reader.tensors()) {
      std::vector<float> values(info.count());
      reader.read_f32(name, info.shape, values.data());
    }
  });
  return 0;
}
