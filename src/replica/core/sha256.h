// SHA-256 (FIPS 180-4): verifies downloaded assets against the hashes their publishers pin.
#pragma once
#include <cstddef>
#include <string>

namespace replica {

// Lower-case hex digest of `size` bytes at `data`.
std::string sha256_hex(const void* data, size_t size);

}  // namespace replica
