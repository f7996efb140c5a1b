// SHA-256 (FIPS 180-4): verifies downloaded assets against the hashes their publishers pin.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace replica {

// Lower-case hex digest of `size` bytes at `data`.
std::string sha256_hex(const void* data, size_t size);

// The same digest of bytes given piece by piece (a file read in chunks, never whole in memory).
class Sha256 {
 public:
  void update(const void* data, size_t size);
  std::string hex();  // the digest of everything given; the object is spent

 private:
  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block_[64] = {};
  size_t used_ = 0;      // bytes in block_
  uint64_t length_ = 0;  // bytes given
};

}  // namespace replica
