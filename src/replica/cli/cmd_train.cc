// replica train: run a recipe (YAML) with section.key=value overrides.
#include <fmt/core.h>

#include "replica/cli/command.h"
#include "replica/train/trainer.h"

namespace replica::cli {

static Command train_command("train", "Train a model from a recipe: replica train --config RECIPE [key=value ...]",
                             [](CLI::App& app) {
  struct Options {
    std::string config;
    std::vector<std::string> overrides;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--config", o->config, "recipe YAML (configs/recipes/*.yaml)")->required();
  app.add_option("overrides", o->overrides, "section.key=value overrides, values parsed as YAML");
  return std::function<int()>([o] {
    const Recipe recipe = load_recipe(o->config, o->overrides);
    const TrainSummary s = train(recipe);
    fmt::print("\nrun directory: {}  (config.yaml, metrics.jsonl, tb/)\n", s.run_dir);
    fmt::print("steps: {}{}   final training loss: {:.4f}\n", s.steps, s.interrupted ? " (interrupted)" : "",
               s.final_loss);
    if (s.heldout_initial >= 0)
      fmt::print("held-out loss: {:.4f} at step 0 -> {:.4f} at step {} ({:+.4f})\n", s.heldout_initial,
                 s.heldout_final, s.steps, s.heldout_final - s.heldout_initial);
    return s.interrupted ? 130 : 0;
  });
});

}  // namespace replica::cli
