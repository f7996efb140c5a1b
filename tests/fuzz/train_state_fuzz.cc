// Fuzzes train_state.json: the checkpoint's step, data position, optimizer state and model config.
#include <filesystem>

#include "fuzz_input.h"
#include "replica/ckpt/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  static const std::string dir = [] {
    const std::string d = fuzz::scratch_dir() + "/step00000002";
    std::filesystem::create_directories(d);
    return d;
  }();
  fuzz::write_input("step00000002/train_state.json", data, size);
  fuzz::expect_only_replica_errors([&] { ckpt::read_checkpoint_model_config(dir); });
  return 0;
}
