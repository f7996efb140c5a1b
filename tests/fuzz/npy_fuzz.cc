// Fuzzes the .npy reader: the header parser on the bytes in memory, then the whole-file reader of token ids.
#include "fuzz_input.h"
#include "replica/core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  fuzz::expect_only_replica_errors([&] {
    const NpyHeader header = parse_npy_header(data, size, "input.npy");
    // A header that parses promises that its elements lie inside the input.
    if (header.data_offset > size || header.count() * npy_type_size(header.type) > size - header.data_offset)
      fuzz::property_failed("parse_npy_header accepted a header whose data does not fit the file");
  });
  const std::string path = fuzz::write_input("input.npy", data, size);
  fuzz::expect_only_replica_errors([&] {
    std::vector<int64_t> shape;
    read_npy_ids(path, &shape);
  });
  return 0;
}
