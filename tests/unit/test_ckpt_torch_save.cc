// ckpt/torch_save on crafted archives: a tensor's view of its storage, bf16, and the refusals a damaged or
// unexpected archive gets (each naming what).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "error_of.h"
#include "replica/ckpt/torch_save.h"
#include "replica/core/bf16.h"
#include "replica/core/error.h"
#include "torch_save_builder.h"

namespace replica::ckpt {
namespace {

using namespace testing;

std::string torch_save_error(const std::string& archive) {
  return error_of([&] { read_torch_save_tensor(archive, "chunk.distcp at byte 0"); });
}

std::string floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

TEST(TorchSave, ReadsAFloatTensorAtItsStorageOffset) {
  // A [2, 3] view starting at element 1 of a 7-element storage.
  const std::string archive = zip({{"archive/data.pkl", tensor_pickle("FloatStorage", 7, 1, {2, 3}, {3, 1})},
                                   {"archive/byteorder", "little"},
                                   {"archive/data/0", floats({9, 0, 1, 2, 3, 4, 5})}});
  const TorchTensor t = read_torch_save_tensor(archive, "test");
  EXPECT_EQ(t.dtype, TorchDtype::f32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> v(6);
  std::memcpy(v.data(), t.data, 24);
  EXPECT_EQ(v, (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(TorchSave, ReadsABfloat16TensorAndAScalar) {
  const uint16_t bits[2] = {to_bf16(1.5f).bits, to_bf16(-2.0f).bits};
  const std::string archive = zip({{"archive/data.pkl", tensor_pickle("BFloat16Storage", 2, 0, {2}, {1})},
                                   {"archive/data/0", std::string(reinterpret_cast<const char*>(bits), 4)}});
  const TorchTensor t = read_torch_save_tensor(archive, "test");
  EXPECT_EQ(t.dtype, TorchDtype::bf16);
  EXPECT_EQ(t.numel(), 2u);
  const TorchTensor scalar = read_torch_save_tensor(saved_f32({7}, {}), "test");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.numel(), 1u);
}

TEST(TorchSave, RefusesDamagedArchives) {
  std::string archive = saved_f32({1, 2, 3, 4}, {4});
  EXPECT_NE(torch_save_error(archive.substr(0, archive.size() - 10)).find("chunk.distcp at byte 0"), std::string::npos);
  EXPECT_NE(torch_save_error("not a zip at all, just some bytes").find("not a torch.save archive"), std::string::npos);
  archive[archive.find("archive/data/0") + 14 + 5] ^= 0x10;  // a bit of the second float
  EXPECT_NE(torch_save_error(archive).find("'archive/data/0' fails its CRC-32 check"), std::string::npos);
  const std::string deflated =
      zip({{"archive/data.pkl", tensor_pickle("FloatStorage", 1, 0, {1}, {1})}, {"archive/data/0", floats({1}), 8}});
  EXPECT_NE(torch_save_error(deflated).find("is compressed (method 8)"), std::string::npos);
}

TEST(TorchSave, RefusesWhatIsNotOneDenseFloatTensor) {
  const std::string data = floats({1, 2, 3, 4, 5, 6});
  auto with = [&](const std::string& pickle, const std::string& storage_bytes) {
    return torch_save_error(zip({{"archive/data.pkl", pickle}, {"archive/data/0", storage_bytes}}));
  };
  EXPECT_NE(with(tensor_pickle("FloatStorage", 6, 0, {2, 3}, {1, 2}), data).find("non-contiguous"), std::string::npos);
  EXPECT_NE(with(tensor_pickle("FloatStorage", 6, 1, {2, 3}, {3, 1}), data).find("at offset 1 in a storage of 6"),
            std::string::npos);
  EXPECT_NE(with(tensor_pickle("FloatStorage", 7, 0, {6}, {1}), data).find("holds 24 bytes"), std::string::npos);
  EXPECT_NE(with(tensor_pickle("HalfStorage", 6, 0, {6}, {1}), data).find("torch.HalfStorage"), std::string::npos);
  EXPECT_NE(with(PickleBuilder().integer(3).done(), data).find("not one tensor"), std::string::npos);
  EXPECT_NE(with(PickleBuilder().global("torch", "load").done(), data).find("'torch.load'"), std::string::npos);
  EXPECT_NE(torch_save_error(zip({{"archive/data.pkl", tensor_pickle("FloatStorage", 6, 0, {6}, {1})}}))
                .find("storage entry 'archive/data/0' is missing"),
            std::string::npos);
  const std::string big_endian = zip({{"archive/data.pkl", tensor_pickle("FloatStorage", 6, 0, {6}, {1})},
                                      {"archive/byteorder", "big"},
                                      {"archive/data/0", data}});
  EXPECT_NE(torch_save_error(big_endian).find("big-endian"), std::string::npos);
}

}  // namespace
}  // namespace replica::ckpt
