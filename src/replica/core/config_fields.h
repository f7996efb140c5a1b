// Config keys as a table of Fields: each says how to read its key from YAML (typed errors naming the source and
// the key) and how to write it back. The recipe and the eval suite are read through these tables.
#pragma once
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "replica/core/error.h"

namespace replica::config {

// What resuming from a checkpoint may do with a key whose value differs from the one the checkpoint's recipe
// saved (train/resume_check.h, docs/checkpoints.md).
enum class OnResume {
  needs_allow_change,  // it changes what the run computes: refused unless train.allow_change names it (the default)
  neutral,             // how or where the run goes on, not what it computes: allowed, and reported
  // neutral while the schedule the run resolves stays the same (train.max_steps, schedule.*)
  neutral_if_schedule_unchanged,
  refused,  // never, train.allow_change or not: the checkpoint's data position holds for its batch shape only
};

// A key's rule for its value: "" when the value is allowed, else what is wrong with it ("must be positive, got 0").
template <typename T>
using Rule = std::function<std::string(const T&)>;

// One key: how to read it from a YAML node and how to write it back, the rule its value keeps and what a resume may
// do with it. `where` names the source (a file, an override) in error messages. `get` is empty for keys nothing
// writes back (a section, a list of mappings).
struct Field {
  std::string key;  // "section.name"
  std::function<void(const YAML::Node&, const std::string& where)> set;
  std::function<YAML::Node()> get;
  // The rule on the value as it is now (once every override is applied): "" or what is wrong. Empty: any value of
  // the kind's type.
  std::function<std::string()> problem = {};
  OnResume on_resume = OnResume::needs_allow_change;

  Field&& resume(OnResume rule) && {
    on_resume = rule;
    return std::move(*this);
  }
  Field&& neutral() && { return std::move(*this).resume(OnResume::neutral); }
};

// The value rules that rows share; messages read after the key: "'data.seq_len' must be positive, got 0".
template <typename T>
Rule<T> positive() {
  return [](const T& v) { return v > 0 ? std::string() : fmt::format("must be positive, got {}", v); };
}
// `note` says what the bound means ("0 = no clipping"): "must be >= 0 (0 = no clipping), got -1".
template <typename T>
Rule<T> at_least(T least, std::string note = "") {
  return [least, note](const T& v) {
    return v >= least ? std::string()
                      : fmt::format("must be >= {}{}, got {}", least, note.empty() ? "" : " (" + note + ")", v);
  };
}

[[noreturn]] void wrong_type(const std::string& where, const std::string& key, const char* expected,
                             const YAML::Node& node);

template <typename T>
T scalar(const YAML::Node& node, const std::string& where, const std::string& key, const char* expected) {
  if (!node.IsScalar()) wrong_type(where, key, expected, node);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    wrong_type(where, key, expected, node);
  }
}

// The entries of the mapping `node` in file order, each key `prefix + key`. A key that is not a scalar
// (`? [a, b] : 1`) or that appears twice raises an Error naming `where` and the key.
std::vector<std::pair<std::string, YAML::Node>> mapping_entries(const YAML::Node& node, const std::string& prefix,
                                                                const std::string& where);

// Each kind takes an optional Rule, kept in Field::problem and checked by the table's reader once every value is
// set (the recipe's validate) rather than as the key is read, so an override can still correct the file.
Field number(std::string key, double& ref, Rule<double> rule = {});
Field integer(std::string key, int64_t& ref, Rule<int64_t> rule = {});
Field integer(std::string key, int64_t& ref, int64_t at_least);  // refuses a value below `at_least` as it reads it
Field unsigned_integer(std::string key, uint64_t& ref);  // refuses a negative value as it reads it
Field boolean(std::string key, bool& ref);
Field text(std::string key, std::string& ref, Rule<std::string> rule = {});  // null reads as ""
Field optional_integer(std::string key, std::optional<int64_t>& ref);  // null reads as none and none writes as null
// Two numbers written as the list [first, second] (the recipe's optim.betas); the rule sees both.
Field number_pair(std::string key, double& first, double& second, const char* expected,
                  std::function<std::string(double, double)> rule = {});

// A list; a single scalar is read as a one-element list, null as an empty one.
template <typename T>
Field list(std::string key, std::vector<T>& ref, const char* expected) {
  return {key,
          [&ref, key, expected](const YAML::Node& n, const std::string& w) {
            ref.clear();
            if (n.IsNull()) return;
            if (n.IsScalar()) {
              ref.push_back(scalar<T>(n, w, key, expected));
              return;
            }
            if (!n.IsSequence()) wrong_type(w, key, expected, n);
            for (const YAML::Node& item : n) ref.push_back(scalar<T>(item, w, key, expected));
          },
          [&ref] {
            YAML::Node n(YAML::NodeType::Sequence);
            for (const T& v : ref) {
              if constexpr (std::is_same_v<T, double>)
                n.push_back(fmt::format("{}", v));
              else
                n.push_back(v);
            }
            n.SetStyle(YAML::EmitterStyle::Flow);
            return n;
          }};
}

// An enum read through its parse function (which raises replica::Error for a bad name).
template <typename E, typename Parse, typename Name>
Field choice(std::string key, E& ref, Parse parse, Name name) {
  return {key,
          [&ref, key, parse](const YAML::Node& n, const std::string& w) {
            std::string value = scalar<std::string>(n, w, key, "a string");
            try {
              ref = parse(value);
            } catch (const Error& e) {
              fail("{}: '{}': {}", w, key, e.what());
            }
          },
          [&ref, name] { return YAML::Node(std::string(name(ref))); }};
}

// Reads every key of the mapping `node` through the field named `prefix + key`. A key without a field raises
// "<where>: unknown key '<prefix><key>' (expected one of ...)"; null reads as an empty mapping, any other
// node that is not a mapping raises.
// " (did you mean 'x'?)" naming the known key closest to `key` by edit distance when it is close (a typo), else "".
std::string did_you_mean(const std::string& key, const std::vector<std::string>& known);

// What a yaml-cpp exception says, in words: its own message, except for the nesting limit, whose message is "bad
// file" (review 2026-12-03 case 123).
std::string yaml_error_text(const YAML::Exception& e);

void read_mapping(const YAML::Node& node, const std::string& prefix, const std::vector<Field>& fields,
                  const std::string& where);

}  // namespace replica::config
