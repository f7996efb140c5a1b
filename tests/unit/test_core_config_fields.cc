// core/config_fields: a mapping is read through a table of typed fields, refusing unknown keys.
#include <gtest/gtest.h>

#include "replica/core/config_fields.h"
#include "replica/core/error.h"

namespace replica {
namespace {

TEST(CoreConfigFields, ReadsAMappingThroughItsFields) {
  int64_t n = 0;
  std::string name;
  std::vector<double> xs;
  const std::vector<config::Field> fields = {config::integer("s.n", n), config::text("s.name", name),
                                             config::list("s.xs", xs, "a list of numbers")};
  // The message of the replica::Error that reading `yaml` raises ("" if none).
  auto read = [&](const char* yaml) -> std::string {
    try {
      config::read_mapping(YAML::Load(yaml), "s.", fields, "f.yaml");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(read("{n: 3, name: abc, xs: 1.5}"), "");
  EXPECT_EQ(n, 3);
  EXPECT_EQ(name, "abc");
  EXPECT_EQ(xs, std::vector<double>{1.5});  // a scalar is a one-element list
  EXPECT_EQ(read("~"), "");                 // null: an empty mapping
  EXPECT_EQ(fields[0].get().as<int64_t>(), 3);

  EXPECT_EQ(read("{n: 3, m: 4}"),
            "f.yaml: unknown key 's.m' (did you mean 's.n'?) (expected one of s.n, s.name, s.xs)");
  EXPECT_EQ(read("{n: 3, colour: 4}"), "f.yaml: unknown key 's.colour' (expected one of s.n, s.name, s.xs)");
  EXPECT_EQ(read("{n: three}"), "f.yaml: 's.n' expects an integer, got three");
  EXPECT_EQ(read("[1, 2]"), "f.yaml: 's' must be a mapping of keys (s.n, s.name, s.xs)");
}

}  // namespace
}  // namespace replica
