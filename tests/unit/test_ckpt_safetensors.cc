// ckpt/safetensors on crafted files (reliability review D5, D9): the tensors must tile the data section exactly,
// keys are unique, and a header of the wrong shape is a named error, not a JSON type error.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "error_of.h"
#include "replica/ckpt/safetensors.h"
#include "replica/core/error.h"
#include "scratch_dir.h"

namespace replica::ckpt {
namespace {

// A safetensors file with `header` verbatim and `data_bytes` bytes of data (float i at byte 4i is i).
std::string write_safetensors(const std::string& header, size_t data_bytes) {
  const std::string path = (testing::scratch_dir("ckpt_safetensors") / "crafted.safetensors").string();
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  for (size_t i = 0; i < data_bytes / 4; i++) {
    const float f = float(i);
    out.write(reinterpret_cast<const char*>(&f), 4);
  }
  out << std::string(data_bytes % 4, '\0');
  return path;
}

std::string safetensors_open_error(const std::string& header, size_t data_bytes) {
  return error_of([&] { SafetensorsReader reader(write_safetensors(header, data_bytes)); });
}

std::string tensor(const char* name, int64_t elements, size_t begin) {
  return "\"" + std::string(name) + "\": {\"dtype\": \"F32\", \"shape\": [" + std::to_string(elements) +
         "], \"data_offsets\": [" + std::to_string(begin) + ", " + std::to_string(begin + 4 * elements) + "]}";
}

TEST(SafetensorsReader, ReadsTensorsThatTileTheData) {
  const std::string path = write_safetensors("{" + tensor("a", 2, 0) + ", " + tensor("b", 3, 8) + "}", 20);
  const SafetensorsReader reader(path);
  std::vector<float> b(3);
  reader.read_f32("b", {3}, b.data());
  EXPECT_EQ(b, (std::vector<float>{2, 3, 4}));
}

TEST(SafetensorsReader, OverlapsGapsAndTrailingBytesAreRefused) {
  // lm_head given embed_tokens' range (the review's wrong-logits file), a window shifted into its neighbour, a gap.
  EXPECT_NE(
      safetensors_open_error("{" + tensor("embed", 2, 0) + ", " + tensor("lm_head", 2, 0) + "}", 16).find("overlaps"),
      std::string::npos);
  EXPECT_NE(safetensors_open_error("{" + tensor("a", 2, 0) + ", " + tensor("b", 2, 4) + "}", 16).find("overlaps"),
            std::string::npos);
  EXPECT_NE(
      safetensors_open_error("{" + tensor("a", 2, 0) + ", " + tensor("b", 2, 12) + "}", 20).find("a gap before it"),
      std::string::npos);
  EXPECT_NE(safetensors_open_error("{" + tensor("a", 2, 4) + "}", 12).find("tensor 'a' starts at byte 4"),
            std::string::npos);
  EXPECT_NE(safetensors_open_error("{" + tensor("a", 2, 0) + "}", 12).find("4 bytes after the last tensor"),
            std::string::npos);
  EXPECT_NE(safetensors_open_error("{" + tensor("a", 4, 0) + "}", 12).find("truncated: tensor 'a' ends at byte 16"),
            std::string::npos);
}

TEST(SafetensorsReader, ARepeatedKeyIsRefused) {
  EXPECT_NE(
      safetensors_open_error("{" + tensor("a", 1, 0) + ", " + tensor("a", 1, 0) + "}", 4).find("key 'a' appears twice"),
      std::string::npos);
  EXPECT_NE(safetensors_open_error(
                "{\"a\": {\"dtype\": \"F32\", \"dtype\": \"F16\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4)
                .find("key 'dtype' appears twice"),
            std::string::npos);
}

TEST(SafetensorsReader, HeadersOfTheWrongShapeAreNamedErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1, 2]", "expected a JSON object of tensors, got array"},
      {"{\"a\": 5}", "tensor 'a' must be an object"},
      {"{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", "tensor 'a' needs a string 'dtype'"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": \"1\", \"data_offsets\": [0, 4]}}", "tensor 'a' needs 'shape'"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", "non-negative integers"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", "malformed data_offsets"},
      {"{\"__metadata__\": {\"format\": 1}}", "__metadata__ 'format' must be a string"},
      {"{\"__metadata__\": [1]}", "__metadata__ must be an object"},
      // 2^32 x 2^32 floats wrap to 0 bytes in 64 bits.
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 0]}}",
       "does not fit in 64 bits"}};
  for (const auto& [header, expected] : cases) {
    const std::string message = safetensors_open_error(header, 4);
    EXPECT_NE(message.find(expected), std::string::npos) << header << ": " << message;
    EXPECT_NE(message.find("crafted.safetensors"), std::string::npos) << message;
  }
}

TEST(SafetensorsReader, SixteenBitDataBehindAnOddHeaderIsRead) {
  // A header of odd length leaves the BF16 data at an odd address; 0x3f80 is 1.0f and 0x4000 2.0f in bfloat16.
  std::string header = "{\"a\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [0, 4]}}";
  if (header.size() % 2 == 0) header += ' ';
  const std::string path = (testing::scratch_dir("ckpt_safetensors") / "odd.safetensors").string();
  {
    std::ofstream out(path, std::ios::binary);
    const std::string& padded = header;
    const uint64_t n = padded.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << padded << std::string("\x80\x3f\x00\x40", 4);
  }
  const SafetensorsReader reader(path);
  std::vector<float> values(2);
  reader.read_f32("a", {2}, values.data());
  EXPECT_EQ(values, (std::vector<float>{1.0f, 2.0f}));
}

}  // namespace
}  // namespace replica::ckpt
