// A scratch directory of this test process. ctest runs the tests in parallel, each in its own process, so a
// fixed path under /tmp would be written by two tests at once (one's rename of a temp file then fails).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace replica::testing {

inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("replica_test_" + std::to_string(::getpid())) / name;
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace replica::testing
