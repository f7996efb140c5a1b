// replica: one binary, git-style subcommands. Every error that reaches main (bad input is a replica::Error naming the
// file or key; anything else is reported as it is) prints one line and exits with status 2.
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <new>

#include "replica/cli/command.h"
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

int main(int argc, char** argv) {
  using namespace replica::cli;
  CLI::App app{"replica: reproduce LLM pre-training recipes (OLMo 3) and prove the reproduction"};
  app.require_subcommand(1);
  auto& entries = commands();
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::map<CLI::App*, std::function<int()>> runners;
  for (auto& entry : entries) {
    CLI::App* sub = app.add_subcommand(entry.name, entry.description);
    runners[sub] = entry.setup(*sub);
  }
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
    fmt::print(stderr, "replica: error: out of memory (std::bad_alloc): a size the command needs, from its flags or its "
                       "input files, is more than this machine can allocate\n");
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "replica: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
