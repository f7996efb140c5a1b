// replica: one binary, git-style subcommands. Every error that reaches main (bad input is a replica::Error naming the
// file or key; anything else is reported as it is) prints one line and exits with status 2.
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "replica/cli/command.h"
#include "replica/cli/version.h"
#include "replica/core/config_fields.h"
#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::cli {

std::vector<CommandEntry>& commands() {
  static std::vector<CommandEntry> registry;
  return registry;
}

Command::Command(std::string name, std::string description, Setup setup) {
  commands().push_back({std::move(name), std::move(description), std::move(setup)});
}

}  // namespace replica::cli

namespace {

// The first argument when it names no subcommand: `--version`/`version`, `help [COMMAND]`, or a typo. Returns the
// exit status when it handled the command line, none when CLI11 should parse it.
std::optional<int> handle_first_argument(CLI::App& app, int argc, char** argv) {
  using namespace replica::cli;
  if (argc < 2) return std::nullopt;
  std::vector<std::string> names;
  for (const CommandEntry& entry : commands()) names.push_back(entry.name);
  auto known = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  const std::string first = argv[1];
  if (first == "--version" || first == "version") {
    fmt::print("replica {} ({})\n", kBuildCommit, kBuildFlags);
    return 0;
  }
  if (first == "help") {
    if (argc > 2 && !known(argv[2])) {
      fmt::print(stderr, "replica: error: help: unknown command '{}'{}\n", argv[2], replica::config::did_you_mean(argv[2], names));
      return 2;
    }
    fmt::print("{}", (argc > 2 ? app.get_subcommand(argv[2]) : &app)->help());
    return 0;
  }
  if (first.starts_with("-") || known(first)) return std::nullopt;
  fmt::print(stderr, "replica: error: unknown command '{}'{}; `replica --help` lists the commands\n", first,
             replica::config::did_you_mean(first, names));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace replica::cli;
  CLI::App app{"replica: reproduce LLM pre-training recipes (OLMo 3) and prove the reproduction"};
  app.require_subcommand(1);
  app.footer("Also: replica --version, replica help [COMMAND]");
  auto& entries = commands();
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::map<CLI::App*, std::function<int()>> runners;
  for (auto& entry : entries) {
    CLI::App* sub = app.add_subcommand(entry.name, entry.description);
    runners[sub] = entry.setup(*sub);
  }
  if (std::optional<int> status = handle_first_argument(app, argc, argv)) return *status;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) {
        const int status = run();
        replica::flush_stdout();  // output that never arrived is a failure, not exit 0
        return status;
      }
  } catch (const std::bad_alloc&) {
    fmt::print(stderr,
               "replica: error: out of memory (std::bad_alloc): a size the command needs, from its flags or its "
               "input files, is more than this machine can allocate\n");
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "replica: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
