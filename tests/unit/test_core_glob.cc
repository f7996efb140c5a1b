// core/glob: glob patterns expand to the files they match, in name order.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace replica
