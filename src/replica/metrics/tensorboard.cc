// TensorBoard event writer and reader (scalars only).
#include "replica/metrics/tensorboard.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::metrics {

uint32_t crc32c(const void* data, size_t size) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // Castagnoli polynomial
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xffffffffu;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

namespace {

// Protocol buffer wire format: key = (field << 3) | wire type; varints little-endian base 128.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += char(v | 0x80);
    v >>= 7;
  }
  out += char(v);
}
void put_key(std::string& out, int field, int wire_type) { put_varint(out, uint64_t(field << 3 | wire_type)); }
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}
template <typename T>
void put_fixed(std::string& out, int field, T value) {
  put_key(out, field, sizeof(T) == 8 ? 1 : 5);
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::string event(double wall_time, int64_t step) {
  std::string e;
  put_fixed(e, 1, wall_time);  // Event.wall_time (double)
  put_key(e, 2, 0);            // Event.step (int64)
  put_varint(e, uint64_t(step));
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::filesystem::create_directories(dir);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  path_ = (std::filesystem::path(dir) /
           ("events.out.tfevents." + std::to_string(int64_t(now_seconds())) + "." + host + ".replica"))
              .string();
}

// The file is created with the first scalar: a run that logs nothing (a resume with nothing to train) leaves no
// empty event file behind.
void TensorBoardWriter::open() {
  file_ = std::fopen(path_.c_str(), "ab");
  check(file_ != nullptr, "{}: cannot create TensorBoard event file", path_);
  std::string first = event(now_seconds(), 0);
  put_bytes(first, 3, "brain.Event:2");  // Event.file_version
  write_record(first);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::write_record(const std::string& payload) {
  const uint64_t length = payload.size();
  const uint32_t length_crc = masked_crc32c(&length, 8), payload_crc = masked_crc32c(payload.data(), payload.size());
  write_all(file_, &length, 8, path_);
  write_all(file_, &length_crc, 4, path_);
  write_all(file_, payload.data(), payload.size(), path_);
  write_all(file_, &payload_crc, 4, path_);
}

void TensorBoardWriter::scalar(const std::string& tag, double value, int64_t step) {
  if (!file_) open();
  std::string v;
  put_bytes(v, 1, tag);           // Summary.Value.tag
  put_fixed(v, 2, float(value));  // Summary.Value.simple_value (float)
  std::string summary;
  put_bytes(summary, 1, v);  // Summary.value
  std::string e = event(now_seconds(), step);
  put_bytes(e, 5, summary);  // Event.summary
  write_record(e);
}

void TensorBoardWriter::flush() {
  if (file_) flush_all(file_, path_);
}

namespace {

uint64_t get_varint(const std::string& s, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0; at < s.size(); shift += 7) {
    const uint8_t b = uint8_t(s[at++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("truncated varint in TensorBoard event");
}

// Calls visit(field, wire_type, payload_or_empty, varint_or_fixed_bits) for each field of a message.
template <typename Visit>
void for_each_field(const std::string& msg, Visit visit) {
  size_t at = 0;
  while (at < msg.size()) {
    const uint64_t key = get_varint(msg, at);
    const int field = int(key >> 3), type = int(key & 7);
    if (type == 0) {
      visit(field, type, std::string(), get_varint(msg, at));
    } else if (type == 1 || type == 5) {
      const size_t n = type == 1 ? 8 : 4;
      check(at + n <= msg.size(), "truncated fixed field in TensorBoard event");
      uint64_t bits = 0;
      std::memcpy(&bits, msg.data() + at, n);
      at += n;
      visit(field, type, std::string(), bits);
    } else if (type == 2) {
      const uint64_t n = get_varint(msg, at);
      check(at + n <= msg.size(), "truncated bytes field in TensorBoard event");
      visit(field, type, msg.substr(at, n), 0);
      at += n;
    } else {
      fail("unsupported protobuf wire type {} in TensorBoard event", type);
    }
  }
}

}  // namespace

std::vector<ScalarEvent> read_tensorboard_scalars(const std::string& path) {
  std::vector<char> bytes = read_file(path);
  std::vector<ScalarEvent> out;
  size_t at = 0;
  while (at < bytes.size()) {
    check(at + 12 <= bytes.size(), "{}: truncated record header at byte {}", path, at);
    uint64_t length;
    uint32_t length_crc, payload_crc;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    check(length_crc == masked_crc32c(&length, 8), "{}: bad length CRC at byte {}", path, at);
    check(at + 16 + length <= bytes.size(), "{}: truncated record at byte {}", path, at);
    std::string payload(bytes.data() + at + 12, length);
    std::memcpy(&payload_crc, bytes.data() + at + 12 + length, 4);
    check(payload_crc == masked_crc32c(payload.data(), payload.size()), "{}: bad payload CRC at byte {}", path, at);
    at += 16 + length;

    int64_t step = 0;
    std::vector<ScalarEvent> values;
    for_each_field(payload, [&](int field, int, const std::string& body, uint64_t bits) {
      if (field == 2) step = int64_t(bits);
      if (field != 5) return;
      for_each_field(body, [&](int, int, const std::string& value, uint64_t) {
        ScalarEvent ev{};
        for_each_field(value, [&](int f, int, const std::string& b, uint64_t raw) {
          if (f == 1) ev.tag = b;
          if (f == 2) {
            uint32_t u = uint32_t(raw);
            std::memcpy(&ev.value, &u, 4);
          }
        });
        values.push_back(ev);
      });
    });
    for (ScalarEvent& ev : values) {
      ev.step = step;
      out.push_back(ev);
    }
  }
  return out;
}

}  // namespace replica::metrics
