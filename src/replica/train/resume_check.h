// What a resume may change. A checkpoint stores the recipe it was trained with; resuming compares it with the
// recipe given now, key by key. Keys that only say how or where the run goes on (threads, logging, cadences,
// device, the run's name) may change and are reported; keys that change what the run computes (optimizer,
// schedule, precision, seed, data) are refused unless train.allow_change names them. Each key's rule is part of its
// row in the recipe's table (config::OnResume in recipe.cc); docs/checkpoints.md holds the rule.
#pragma once
#include <string>
#include <vector>

#include "replica/train/recipe.h"

namespace replica::train {

struct RecipeChange {
  std::string key, before, after;
};

// The keys whose values differ between the recipe a checkpoint saved (its YAML) and `now`, in key order.
std::vector<RecipeChange> recipe_changes(const std::string& saved_yaml, const Recipe& now);

// True for keys that do not change what the run computes from the checkpoint on. The model is compared
// structurally and the data by its fingerprint, elsewhere; train.max_steps and schedule.* count as neutral when the
// schedule they resolve to is unchanged (`schedule_unchanged`).
bool neutral_on_resume(const std::string& key, bool schedule_unchanged);

// Raises replica::Error naming `checkpoint` and every refused change (key, saved value, new value) unless
// train.allow_change lists it, and how to keep the schedule's horizon (`saved_horizon` steps; 0: not known) when
// train.max_steps was refused; returns one line per change made, for the log.
std::vector<std::string> check_resume_changes(const std::string& checkpoint, const std::string& saved_yaml,
                                              const Recipe& now, bool schedule_unchanged, int64_t saved_horizon = 0);

}  // namespace replica::train
