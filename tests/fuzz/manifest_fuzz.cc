// Fuzzes MANIFEST.json verification against a checkpoint directory holding two small files.
#include <filesystem>

#include "fuzz_input.h"
#include "replica/ckpt/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  static const std::string dir = [] {
    const std::string d = fuzz::scratch_dir() + "/step00000002";
    std::filesystem::create_directories(d);
    const uint8_t weights[] = {1, 2, 3, 4, 5, 6, 7, 8};
    fuzz::write_input("step00000002/model.safetensors", weights, sizeof weights);
    fuzz::write_input("step00000002/train_state.json", reinterpret_cast<const uint8_t*>("{}\n"), 3);
    return d;
  }();
  fuzz::write_input("step00000002/MANIFEST.json", data, size);
  fuzz::expect_only_replica_errors([&] { ckpt::verify_manifest(dir, {"model.safetensors", "train_state.json"}); });
  return 0;
}
