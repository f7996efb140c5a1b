// Fuzzes token files (headerless uint16/uint32 or .npy): open, read every token, hash the content.
#include <vector>

#include "fuzz_input.h"
#include "replica/data/token_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  if (size == 0) return 0;
  // The first byte picks the dtype a headerless file is read as; the rest is the file.
  const data::TokenDtype dtype = data[0] & 1 ? data::TokenDtype::u16 : data::TokenDtype::u32;
  const std::string path = fuzz::write_input("tokens.npy", data + 1, size - 1);
  fuzz::expect_only_replica_errors([&] {
    const data::TokenFile file(path, dtype);
    if (file.num_tokens() > file.file_size()) fuzz::property_failed("more tokens than bytes in the file");
    std::vector<int32_t> ids(file.num_tokens());
    file.read(0, file.num_tokens(), ids.data(), UINT32_MAX);
    file.content_hash();
  });
  return 0;
}
