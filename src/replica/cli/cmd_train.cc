// replica train: run a recipe (YAML) with section.key=value overrides.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/distributed/communicator.h"
#include "replica/train/trainer.h"

namespace replica::cli {

// Under mpirun an error that every rank raises alike (a bad recipe, a batch the ranks do not divide) is printed once,
// by rank 0, and one rank's own error still names it: rank 0 ends the job at once, any other rank waits a moment
// first, so that when rank 0 failed as well its abort ends this rank before it prints.
static void end_job(distributed::Communicator& comm, const std::string& message) {
  if (comm.rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(3));
  comm.abort(message, 2);
}

static Command train_command("train", "Train a model from a recipe: replica train --config RECIPE [key=value ...]",
                             [](CLI::App& app) {
  struct Options {
    std::string config;
    std::vector<std::string> overrides;
    bool print_config = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--config", o->config, "recipe YAML (configs/recipes/*.yaml)")->required();
  app.add_option("overrides", o->overrides, "section.key=value overrides, values parsed as YAML");
  app.add_flag("--print-config", o->print_config,
               "print the recipe as it would run (every key, overrides applied) and exit without training");
  return std::function<int()>([o] {
    if (o->print_config) {
      fmt::print("{}", train::load_recipe(o->config, o->overrides).to_yaml());
      return 0;
    }
    // Under mpirun every rank runs this; rank 0 alone prints, and an error on any rank ends the whole job.
    std::unique_ptr<distributed::Communicator> comm = distributed::connect();
    if (comm->rank() != 0 && !std::freopen("/dev/null", "w", stdout)) comm->abort("cannot silence stdout", 2);
    train::TrainSummary s;
    try {
      s = train::train(train::load_recipe(o->config, o->overrides), *comm);
    } catch (const std::exception& e) {
      if (comm->size() == 1) throw;
      end_job(*comm, e.what());
    }
    fmt::print("\nrun directory: {}  (config.yaml, metrics.jsonl, report.html, tb/, checkpoints/)\n", s.run_dir);
    if (s.final_loss)
      fmt::print("steps: {}{}   final training loss: {:.4f}\n", s.steps, s.interrupted ? " (interrupted)" : "",
                 *s.final_loss);
    else
      fmt::print("steps: {} (none run now: the run was already there)\n", s.steps);
    if (s.heldout_initial && s.heldout_final)
      fmt::print("held-out loss: {:.4f} at step 0 -> {:.4f} at step {} ({:+.4f})\n", *s.heldout_initial,
                 *s.heldout_final, s.steps, *s.heldout_final - *s.heldout_initial);
    else if (s.heldout_initial && s.interrupted)
      fmt::print("held-out loss: {:.4f} at step 0 (none at step {}: the final evaluation is skipped after a stop)\n",
                 *s.heldout_initial, s.steps);
    return s.by_signal ? 130 : 0;
  });
});

}  // namespace replica::cli
