// Fuzzes eval suite files: sections, keys, types and values of every surface.
#include "fuzz_input.h"
#include "replica/eval/suite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  const std::string path = fuzz::write_input("suite.yaml", data, size);
  fuzz::expect_only_replica_errors([&] { eval::load_suite(path); });
  return 0;
}
