// Fuzzes torch.save archives (one per chunk of a .distcp file): the zip central directory and zip64 records, the
// entries' CRC-32, data.pkl through the restricted unpickler, and the tensor's storage, size, stride and offset.
// Property: a tensor read lies inside the input.
#include <string_view>

#include "fuzz_input.h"
#include "replica/ckpt/torch_save.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::expect_only_replica_errors([&] {
    const ckpt::TorchTensor t = ckpt::read_torch_save_tensor(bytes, "fuzz input");
    const size_t length = t.numel() * ckpt::torch_dtype_size(t.dtype);
    if (t.data < bytes.data() || length > size_t(bytes.data() + size - t.data))
      fuzz::property_failed("the tensor's bytes lie outside the archive");
  });
  return 0;
}
