// TensorBoard event files (tfevents): TFRecord framing (length, masked CRC32C of the length, payload,
// masked CRC32C of the payload) around Event protocol buffers holding scalar summaries. The protobuf wire
// format of the few fields used (Event.wall_time/step/file_version/summary, Summary.Value.tag/simple_value)
// is written by hand.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace replica::metrics {

uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);

class TensorBoardWriter {
 public:
  // Creates `dir`; the file events.out.tfevents.<time>.<host> inside it is created with the first scalar.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void scalar(const std::string& tag, double value, int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void open();
  void write_record(const std::string& payload);
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Decoded scalars of an event file (for tests and tools): (tag, step, value) in file order. Raises
// replica::Error on a bad CRC or truncated record.
struct ScalarEvent {
  std::string tag;
  int64_t step;
  float value;
};
std::vector<ScalarEvent> read_tensorboard_scalars(const std::string& path);

}  // namespace replica::metrics
