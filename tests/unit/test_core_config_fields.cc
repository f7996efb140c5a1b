// core/config_fields: a mapping is read through a table of typed fields, refusing unknown keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "error_of.h"
#include "replica/core/config_fields.h"
#include "replica/core/error.h"

namespace replica {
namespace {

// The message of the replica::Error that reading `yaml` (the mapping of section "s") raises ("" if none).
std::string mapping_error(const std::vector<config::Field>& fields, const char* yaml) {
  return error_of([&] { config::read_mapping(YAML::Load(yaml), "s.", fields, "f.yaml"); });
}

TEST(CoreConfigFields, ReadsAMappingThroughItsFields) {
  int64_t n = 0;
  std::string name;
  std::vector<double> xs;
  const std::vector<config::Field> fields = {config::integer("s.n", n), config::text("s.name", name),
                                             config::list("s.xs", xs, "a list of numbers")};
  auto read = [&](const char* yaml) { return mapping_error(fields, yaml); };
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

// Reliability review D5 and D14: yaml-cpp's conversion error for a non-scalar key used to escape as
// YAML::TypedBadConversion, and a repeated key let the last copy win in silence.
TEST(CoreConfigFields, KeysMustBeNamesThatAppearOnce) {
  int64_t n = 0;
  const std::vector<config::Field> fields = {config::integer("s.n", n)};
  auto read = [&](const char* yaml) { return mapping_error(fields, yaml); };
  EXPECT_EQ(read("? [a, b]\n: 1\n"), "f.yaml: a key in 's' is not a name: [a, b]");
  EXPECT_EQ(read("n: 1\nn: 2\n"), "f.yaml: 's.n' appears twice");
}

TEST(CoreConfigFields, NumbersAreFiniteAndBoundedIntegersRefuseWhatIsBelow) {
  double x = 0;
  int64_t window = 0;
  const std::vector<config::Field> fields = {config::number("s.x", x), config::integer("s.window", window, 1)};
  auto read = [&](const char* yaml) { return mapping_error(fields, yaml); };
  EXPECT_EQ(read("{x: .inf}"), "f.yaml: 's.x' expects a finite number, got .inf");
  EXPECT_EQ(read("{x: .nan}"), "f.yaml: 's.x' expects a finite number, got .nan");
  EXPECT_EQ(read("{x: 2.5, window: 3}"), "");
  EXPECT_EQ(x, 2.5);
  EXPECT_EQ(window, 3);
  EXPECT_EQ(read("{window: 0}"), "f.yaml: s.window must be >= 1, got 0");
  EXPECT_EQ(window, 3);  // a refused value is not stored
}

// The suggestion is the first known key at the smallest edit distance, if that is at most a quarter of the key's
// letters (at least 2): the same pick as the full Levenshtein table, for keys of every length against every other.
TEST(CoreConfigFields, DidYouMeanPicksTheClosestKeyAsTheFullTableDoes) {
  auto levenshtein = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); i++) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); j++) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); i++)
      for (size_t j = 1; j <= b.size(); j++)
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    return d[a.size()][b.size()];
  };
  std::vector<std::string> words;  // over a 3-letter alphabet, so that many are near each other
  uint64_t state = 7;
  for (int n = 0; n < 300; n++) {
    std::string w;
    for (int length = int(n % 23); length > 0; length--) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      w += char('a' + (state >> 33) % 3);
    }
    words.push_back(w);
  }
  const std::vector<std::string> known(words.begin(), words.begin() + 40);
  for (const std::string& key : words) {
    const std::string* best = nullptr;
    size_t best_distance = std::max<size_t>(2, key.size() / 4) + 1;
    for (const std::string& k : known)
      if (levenshtein(key, k) < best_distance) best = &k, best_distance = levenshtein(key, k);
    EXPECT_EQ(config::did_you_mean(key, known), best ? " (did you mean '" + *best + "'?)" : "") << key;
  }
  EXPECT_EQ(config::did_you_mean(std::string(5000, 'a') + "n", {"s.n", std::string(4990, 'a')}),
            " (did you mean '" + std::string(4990, 'a') + "'?)");
}

}  // namespace
}  // namespace replica
