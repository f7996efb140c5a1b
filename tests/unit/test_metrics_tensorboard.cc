// TensorBoard event files: CRC32C against the standard check value, and scalars decoded back exactly.
#include <gtest/gtest.h>

#include <filesystem>

#include "replica/core/error.h"
#include "replica/metrics/tensorboard.h"
#include "scratch_dir.h"

namespace replica::metrics {
namespace {

TEST(TensorBoard, Crc32cCheckValue) {
  // The CRC-32C check value of "123456789" (RFC 3720, iSCSI).
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
  // TFRecord masking: rotate right by 15 and add 0xa282ead8.
  const uint32_t c = 0xe3069283u;
  EXPECT_EQ(masked_crc32c("123456789", 9), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(TensorBoard, ScalarsRoundTrip) {
  const std::string dir = replica::testing::scratch_dir("tb").string();
  std::filesystem::remove_all(dir);
  std::string path;
  {
    TensorBoardWriter tb(dir);
    tb.flush();
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "no event file before the first scalar";
    tb.scalar("train/loss", 10.5, 1);
    tb.scalar("train/lr", 3e-4, 1);
    tb.scalar("train/loss", 9.25, 300);
    path = tb.path();
  }
  auto events = read_tensorboard_scalars(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].tag, "train/loss");
  EXPECT_EQ(events[0].step, 1);
  EXPECT_EQ(events[0].value, 10.5f);
  EXPECT_EQ(events[1].value, float(3e-4));
  EXPECT_EQ(events[2].step, 300);
  EXPECT_EQ(events[2].value, 9.25f);

  // A truncated record is an error, not a silent short read.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 2);
  EXPECT_THROW(read_tensorboard_scalars(path), Error);
}

}  // namespace
}  // namespace replica::metrics
