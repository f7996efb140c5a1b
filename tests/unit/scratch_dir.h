// A scratch directory of this test process. ctest runs the tests in parallel, each in its own process, so a
// fixed path under /tmp would be written by two tests at once (one's rename of a temp file then fails).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace replica::testing {

// /tmp/replica_test_<pid>, removed when the process exits if every test passed (a make test run starts ~600
// processes; each left its directory behind, megabytes each), kept and named on stderr if one failed, to look into.
inline const std::filesystem::path& process_scratch_root() {
  struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("replica_test_" + std::to_string(::getpid()));
    ~Root() {
      // gtest's UnitTest is never destroyed, so it can still be asked here, at static destruction.
      if (::testing::UnitTest::GetInstance()->Passed()) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      } else {
        std::fprintf(stderr, "scratch files of this test process kept in %s\n", path.c_str());
      }
    }
  };
  static const Root root;
  return root.path;
}

inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = process_scratch_root() / name;
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
