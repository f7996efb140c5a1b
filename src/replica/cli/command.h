// Subcommand registry: each cli/*.cc file registers one subcommand with a static Command object,
// so adding a subcommand never touches main.cc.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace replica::cli {

// setup() declares the subcommand's options on `app` and returns the function that runs it.
using Setup = std::function<std::function<int()>(CLI::App& app)>;

struct Command {
  Command(std::string name, std::string description, Setup setup);
};

struct CommandEntry {
  std::string name, description;
  Setup setup;
};
std::vector<CommandEntry>& commands();

}  // namespace replica::cli
