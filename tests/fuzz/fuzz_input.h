// What every fuzz harness shares: a private scratch directory for parsers that read files, and the property
// they all check: bad input raises replica::Error, never another exception, a crash or a sanitizer report.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "replica/core/error.h"

namespace replica::fuzz {

// A directory of this process's own under $TMPDIR (default /dev/shm where it exists, else /tmp), removed at exit.
const std::string& scratch_dir();

// Writes the fuzzer's bytes to scratch_dir()/name, replacing what was there, and returns the path.
std::string write_input(const std::string& name, const uint8_t* data, size_t size);

// Runs `parse`. replica::Error is the answer to bad input and ends the run quietly; any other exception
// escapes to libFuzzer, which reports it as a crash (uncaught exception, abort).
template <typename Parse>
void expect_only_replica_errors(Parse&& parse) {
  try {
    parse();
  } catch (const Error&) {
  }
}

// Stops the process with `what` when a harness's own property (a round trip) fails: libFuzzer saves the input.
[[noreturn]] void property_failed(const std::string& what);

}  // namespace replica::fuzz
