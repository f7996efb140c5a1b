// core/npy, core/file and ckpt/safetensors: round trips and the errors bad files get.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "scratch_dir.h"
#include "replica/ckpt/safetensors.h"
#include "replica/core/bf16.h"
#include "replica/core/error.h"
#include "replica/core/npy.h"

namespace replica {
namespace {

std::string temp_path(const std::string& name) {
  return (replica::testing::scratch_dir("core_io") / name).string();
}

TEST(Npy, RoundTripFloatAndIds) {
  std::string path = temp_path("a.npy");
  std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1e-30f};
  write_npy(path, NpyType::f32, {2, 3}, values.data());
  NpyArray array = read_npy(path);
  EXPECT_EQ(array.header.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array.header.type, NpyType::f32);
  for (size_t i = 0; i < values.size(); i++) EXPECT_EQ(array.as<float>()[i], values[i]);

  std::vector<int64_t> ids = {5, 100257, 0, 42};
  write_npy(path, NpyType::i64, {4}, ids.data());
  std::vector<int64_t> shape;
  EXPECT_EQ(read_npy_ids(path, &shape), ids);
  EXPECT_EQ(shape, (std::vector<int64_t>{4}));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Npy, TruncatedFileNamesTheFile) {
  std::string path = temp_path("b.npy");
  std::vector<float> values(100, 1.0f);
  write_npy(path, NpyType::f32, {100}, values.data());
  std::filesystem::resize_file(path, 200);
  try {
    read_npy(path);
    FAIL() << "expected replica::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(round_to_bf16(1.0f + 1.0f / 256), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(round_to_bf16(1.0f + 3.0f / 256), 1.0f + 1.0f / 64);
  EXPECT_EQ(round_to_bf16(1.0f + 1.0f / 256 + 1.0f / 4096), 1.0f + 1.0f / 128);
}

TEST(Safetensors, RoundTripF32AndBf16) {
  std::string path = temp_path("m.safetensors");
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {0.5f, -1.25f, 3.0f};
  ckpt::write_safetensors(
      path, {{"a.weight", {2, 3}, a.data(), ckpt::StDtype::F32}, {"b", {3}, b.data(), ckpt::StDtype::BF16}},
      {{"format", "pt"}});
  ckpt::SafetensorsReader reader(path);
  EXPECT_EQ(reader.metadata.at("format"), "pt");
  std::vector<float> a2(6), b2(3);
  reader.read_f32("a.weight", {2, 3}, a2.data());
  reader.read_f32("b", {3}, b2.data());
  EXPECT_EQ(a, a2);
  EXPECT_EQ(b, b2);
}

TEST(Safetensors, ErrorsNameTensorAndFile) {
  std::string path = temp_path("bad.safetensors");
  std::vector<float> a(64, 1.0f);
  ckpt::write_safetensors(path, {{"model.norm.weight", {64}, a.data(), ckpt::StDtype::F32}});
  ckpt::SafetensorsReader reader(path);
  std::vector<float> dst(64);
  EXPECT_THROW(
      {
        try {
          reader.read_f32("model.norm.weight", {32}, dst.data());
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("model.norm.weight"), std::string::npos);
          EXPECT_NE(std::string(e.what()).find("expected [32]"), std::string::npos);
          throw;
        }
      },
      Error);
  EXPECT_THROW(reader.read_f32("lm_head.weight", {64}, dst.data()), Error);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  try {
    ckpt::SafetensorsReader truncated(path);
    FAIL() << "expected replica::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("model.norm.weight"), std::string::npos);
  }
}

}  // namespace
}  // namespace replica
