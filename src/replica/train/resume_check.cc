// Recipe changes on resume: a flat key → value view of both recipes, and the rule of which may change.
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

// How or where the run goes on, not what it computes. Prefixes end with '.'.
constexpr const char* kNeutral[] = {
    "run.",        "checkpoint.",          "eval.",          "train.stop_at",          "train.threads",
    "train.log_every", "train.progress", "train.resume_from", "train.allow_change", "train.profile",     "train.remat",
    "train.shard_weights", "train.context_parallel", "train.cp_head_stride", "train.device",  "train.attention",
    "data.micro_batch_size", "data.allow_fingerprint_change",
    "data.validation_paths", "data.paths", "data.mix_file", "model.", "optim.load_state",
    "data.base_dir", "data.cache_dir", "data.cache_bytes", "data.http_timeout", "data.http_retries", "data.read_ahead",
    "optim.host_moments",
};

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
  if (key == "train.max_steps") return schedule_unchanged;
  return std::any_of(std::begin(kNeutral), std::end(kNeutral), [&](const std::string& n) {
    return n.back() == '.' ? key.starts_with(n) : key == n;
  });
}

std::vector<std::string> check_resume_changes(const std::string& checkpoint, const std::string& saved_yaml,
                                              const Recipe& now, bool schedule_unchanged) {
  const std::vector<std::string>& allowed = now.train.allow_change;
  std::vector<std::string> lines, refused, keys;
  for (const RecipeChange& c : recipe_changes(saved_yaml, now)) {
    const std::string what = fmt::format("{}: {} -> {}", c.key, c.before, c.after);
    if (neutral_on_resume(c.key, schedule_unchanged) ||
        std::find(allowed.begin(), allowed.end(), c.key) != allowed.end()) {
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
