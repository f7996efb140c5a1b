// The scalar Field kinds and the mapping reader that refuses unknown keys.
#include "replica/core/config_fields.h"

#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cmath>

namespace replica::config {

void wrong_type(const std::string& where, const std::string& key, const char* expected, const YAML::Node& node) {
  fail("{}: '{}' expects {}, got {}", where, key, expected, YAML::Dump(node));
}

// Every number a config holds is finite: `.inf` or `.nan` would train on NaN without a word.
static double finite_number(const YAML::Node& n, const std::string& where, const std::string& key,
                            const char* expected) {
  const double value = scalar<double>(n, where, key, expected);
  if (!std::isfinite(value)) wrong_type(where, key, "a finite number", n);
  return value;
}

// The Field::problem of a rule over `ref` (none without a rule).
template <typename T>
static std::function<std::string()> problem_of(const T& ref, Rule<T> rule) {
  if (!rule) return {};
  return [&ref, rule = std::move(rule)] { return rule(ref); };
}

Field number(std::string key, double& ref, Rule<double> rule) {
  return {key,
          [&ref, key](const YAML::Node& n, const std::string& w) { ref = finite_number(n, w, key, "a number"); },
          [&ref] { return YAML::Node(fmt::format("{}", ref)); }, problem_of(ref, std::move(rule))};
}

Field number_pair(std::string key, double& first, double& second, const char* expected,
                  std::function<std::string(double, double)> rule) {
  return {key,
          [&first, &second, key, expected](const YAML::Node& n, const std::string& w) {
            if (!n.IsSequence() || n.size() != 2) wrong_type(w, key, expected, n);
            first = finite_number(n[0], w, key, expected);
            second = finite_number(n[1], w, key, expected);
          },
          [&first, &second] {
            YAML::Node n(YAML::NodeType::Sequence);
            n.push_back(fmt::format("{}", first));
            n.push_back(fmt::format("{}", second));
            n.SetStyle(YAML::EmitterStyle::Flow);
            return n;
          },
          rule ? std::function<std::string()>([&first, &second, rule] { return rule(first, second); })
               : std::function<std::string()>()};
}

Field integer(std::string key, int64_t& ref, Rule<int64_t> rule) {
  return {key,
          [&ref, key](const YAML::Node& n, const std::string& w) { ref = scalar<int64_t>(n, w, key, "an integer"); },
          [&ref] { return YAML::Node(ref); }, problem_of(ref, std::move(rule))};
}

Field integer(std::string key, int64_t& ref, int64_t at_least) {
  return {key,
          [&ref, key, at_least](const YAML::Node& n, const std::string& w) {
            const int64_t value = scalar<int64_t>(n, w, key, "an integer");
            check(value >= at_least, "{}: {} must be >= {}, got {}", w, key, at_least, value);
            ref = value;
          },
          [&ref] { return YAML::Node(ref); }};
}

Field unsigned_integer(std::string key, uint64_t& ref) {
  return {key,
          [&ref, key](const YAML::Node& n, const std::string& w) {
            const int64_t value = scalar<int64_t>(n, w, key, "an integer");
            check(value >= 0, "{}: '{}' must be >= 0, got {}", w, key, value);
            ref = uint64_t(value);
          },
          [&ref] { return YAML::Node(ref); }};
}

Field boolean(std::string key, bool& ref) {
  return {key,
          [&ref, key](const YAML::Node& n, const std::string& w) { ref = scalar<bool>(n, w, key, "true or false"); },
          [&ref] { return YAML::Node(ref); }};
}

Field text(std::string key, std::string& ref, Rule<std::string> rule) {
  return {key,
          [&ref, key](const YAML::Node& n, const std::string& w) {
            ref = n.IsNull() ? "" : scalar<std::string>(n, w, key, "a string");
          },
          [&ref] { return YAML::Node(ref); }, problem_of(ref, std::move(rule))};
}

Field optional_integer(std::string key, std::optional<int64_t>& ref) {
  return {key,
          [&ref, key](const YAML::Node& n, const std::string& w) {
            ref = n.IsNull() ? std::nullopt : std::optional(scalar<int64_t>(n, w, key, "an integer or null"));
          },
          [&ref] { return ref ? YAML::Node(*ref) : YAML::Node(YAML::NodeType::Null); }};
}

namespace {

// The Levenshtein distance of a and b if it is below `limit`, else `limit`. A fuzzed or pasted key may be thousands
// of letters long, so the rows stop once they cannot end below the limit: the lengths alone differ by at least that
// many edits, or every cell of a row is at the limit already (along any alignment the count never decreases).
size_t distance_below(const std::string& a, const std::string& b, size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) >= limit) return limit;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) row[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t smallest = row[0];
    for (size_t j = 1; j <= b.size(); j++) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      smallest = std::min(smallest, row[j]);
    }
    if (smallest >= limit) return limit;
  }
  return std::min(row[b.size()], limit);
}

}  // namespace

std::string did_you_mean(const std::string& key, const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  size_t best_distance = std::max<size_t>(2, key.size() / 4) + 1;  // at most a quarter of the key's letters wrong
  for (const std::string& k : known)
    if (const size_t d = distance_below(key, k, best_distance); d < best_distance) best = &k, best_distance = d;
  return best ? fmt::format(" (did you mean '{}'?)", *best) : "";
}

void read_mapping(const YAML::Node& node, const std::string& prefix, const std::vector<Field>& fields,
                  const std::string& where) {
  if (node.IsNull()) return;  // a key written with nothing after it: no settings
  std::vector<std::string> known;
  for (const Field& f : fields) known.push_back(f.key);
  check(node.IsMap(), "{}: {} must be a mapping of keys ({})", where,
        prefix.empty() ? std::string("the file") : fmt::format("'{}'", prefix.substr(0, prefix.size() - 1)),
        fmt::join(known, ", "));
  for (const auto& [key, value] : mapping_entries(node, prefix, where)) {
    const auto f = std::find_if(fields.begin(), fields.end(), [&key = key](const Field& x) { return x.key == key; });
    check(f != fields.end(), "{}: unknown key '{}'{} (expected one of {})", where, key, did_you_mean(key, known),
          fmt::join(known, ", "));
    f->set(value, where);
  }
}

std::vector<std::pair<std::string, YAML::Node>> mapping_entries(const YAML::Node& node, const std::string& prefix,
                                                                const std::string& where) {
  std::vector<std::pair<std::string, YAML::Node>> entries;
  for (const auto& item : node) {
    check(item.first.IsScalar(), "{}: a key in {} is not a name: {}", where,
          prefix.empty() ? std::string("the file") : fmt::format("'{}'", prefix.substr(0, prefix.size() - 1)),
          YAML::Dump(item.first));
    std::string key = prefix + item.first.Scalar();
    // yaml-cpp keeps both copies of a repeated key; a reader would silently let the last one win.
    for (const auto& seen : entries) check(seen.first != key, "{}: '{}' appears twice", where, key);
    entries.emplace_back(std::move(key), item.second);
  }
  return entries;
}

std::string yaml_error_text(const YAML::Exception& e) {
  if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&e))
    return fmt::format("nested more than {} levels deep, at line {}, column {}", deep->depth() - 1, e.mark.line + 1,
                       e.mark.column + 1);
  return e.what();
}

}  // namespace replica::config
