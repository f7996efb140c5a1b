// Fuzzes mix files (one token file per line, `label,path` or `path`, # comments).
#include "fuzz_input.h"
#include "replica/data/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  const std::string path = fuzz::write_input("train.mix", data, size);
  fuzz::expect_only_replica_errors([&] {
    for (const data::MixEntry& entry : data::read_mix_file(path))
      if (entry.path.empty()) fuzz::property_failed("read_mix_file gave an entry without a path");
  });
  return 0;
}
