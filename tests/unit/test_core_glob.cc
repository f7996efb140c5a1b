// core/glob: glob patterns expand to the files they match, in name order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "scratch_dir.h"
#include "replica/core/error.h"
#include "replica/core/glob.h"

namespace replica {
namespace {

TEST(CoreGlob, ExpandsPatternsInNameOrder) {
  const std::string dir = replica::testing::scratch_dir("glob").string();
  for (const char* f : {"b.npy", "a.npy", "c.txt"}) std::ofstream(dir + "/" + f) << "x";
  EXPECT_EQ(glob_matches(dir + "/*.npy"), (std::vector<std::string>{dir + "/a.npy", dir + "/b.npy"}));
  EXPECT_EQ(glob_matches(dir + "/c.txt"), std::vector<std::string>{dir + "/c.txt"});
  EXPECT_TRUE(glob_matches(dir + "/missing.txt").empty());
  EXPECT_EQ(expand_globs({"literal.npy", dir + "/*.npy"}, "r.yaml", "data.paths"),
            (std::vector<std::string>{"literal.npy", dir + "/a.npy", dir + "/b.npy"}));
  try {
    expand_globs({dir + "/*.bin"}, "r.yaml", "data.paths");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "r.yaml: 'data.paths': no file matches " + dir + "/*.bin");
  }
}

TEST(CoreGlob, ARelativePatternMatchingNothingSaysWhatItWasResolvedAgainst) {
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(resolved_against("data/x.npy"),
            " (resolved against the current directory " + cwd + ", not the recipe's)");
  EXPECT_EQ(resolved_against("/abs/x.npy"), "");
  try {
    expand_globs({"no_such_dir_here/*.npy"}, "r.yaml", "data.validation_paths");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "r.yaml: 'data.validation_paths': no file matches no_such_dir_here/*.npy" +
                                         resolved_against("no_such_dir_here/*.npy"));
  }
}

}  // namespace
}  // namespace replica
