// A scratch directory of this test process. ctest runs the tests in parallel, each in its own process, so a
// fixed path under /tmp would be written by two tests at once (one's rename of a temp file then fails).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace replica::testing {

inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("replica_test_" + std::to_string(::getpid())) / name;
  std::filesystem::create_directories(dir);
  return dir;
}

// A directory of the running test alone, named after it: empty when the test starts, removed when it ends.
struct TestDir {
  std::filesystem::path path = scratch_dir(test_name());
  TestDir() {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TestDir() { std::filesystem::remove_all(path); }

 private:
  static std::string test_name() {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(test->test_suite_name()) + "." + test->name();
  }
};

}  // namespace replica::testing
