// Recipe changes on resume: a flat key → value view of both recipes, judged by each key's resume rule (its row in
// recipe.cc).
#include "replica/train/resume_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "replica/core/error.h"

namespace replica::train {
namespace {

// section.key → the value as one line of YAML.
std::map<std::string, std::string> flat_values(const std::string& yaml, const std::string& source) {
  std::map<std::string, std::string> out;
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    fail("{}: the saved recipe is not valid YAML ({})", source, e.what());
  }
  if (!root.IsMap()) return out;
  for (const auto& section : root) {
    if (!section.second.IsMap()) continue;
    for (const auto& item : section.second) {
      YAML::Emitter line;
      line << YAML::Flow << item.second;
      out[section.first.Scalar() + "." + item.first.Scalar()] = line.c_str();
    }
  }
  return out;
}

// What a resume may do with `key`: its row's rule (recipe.cc).
config::OnResume rule_of(const std::string& key) {
  static const auto rules = resume_rules();
  for (const auto& [k, rule] : rules)
    if (k == key) return rule;
  return config::OnResume::needs_allow_change;  // not a key of this build's recipe
}

}  // namespace

std::vector<RecipeChange> recipe_changes(const std::string& saved_yaml, const Recipe& now) {
  const auto before = flat_values(saved_yaml, "train_state.json"), after = flat_values(now.to_yaml(), "recipe");
  const auto defaults = flat_values(Recipe{}.to_yaml(), "the default recipe");
  std::vector<RecipeChange> changes;
  for (const auto& [key, value] : after) {
    // A key newer than the checkpoint had its default value when the checkpoint was written.
    const auto it = before.find(key);
    const std::string& old = it != before.end() ? it->second : defaults.at(key);
    if (old != value) changes.push_back({key, old, value});
  }
  return changes;
}

bool neutral_on_resume(const std::string& key, bool schedule_unchanged) {
  switch (rule_of(key)) {
    case config::OnResume::neutral: return true;
    case config::OnResume::neutral_if_schedule_unchanged: return schedule_unchanged;
    case config::OnResume::needs_allow_change:
    case config::OnResume::refused: return false;
  }
  return false;
}

std::vector<std::string> check_resume_changes(const std::string& checkpoint, const std::string& saved_yaml,
                                              const Recipe& now, bool schedule_unchanged) {
  const std::vector<std::string>& allowed = now.train.allow_change;
  std::vector<std::string> lines, refused, keys;
  for (const RecipeChange& c : recipe_changes(saved_yaml, now)) {
    const std::string what = fmt::format("{}: {} -> {}", c.key, c.before, c.after);
    const bool allowed_by_key = rule_of(c.key) != config::OnResume::refused &&
                                std::find(allowed.begin(), allowed.end(), c.key) != allowed.end();
    if (neutral_on_resume(c.key, schedule_unchanged) || allowed_by_key) {
      lines.push_back("resume changes " + what);
    } else {
      refused.push_back(what);
      keys.push_back(c.key);
    }
  }
  check(refused.empty(),
        "{}: resuming with a recipe that changes what the run computes ({}); resume with the saved values, or "
        "allow the change explicitly with train.allow_change=[{}]",
        checkpoint, fmt::join(refused, "; "), fmt::join(keys, ","));
  return lines;
}

}  // namespace replica::train
