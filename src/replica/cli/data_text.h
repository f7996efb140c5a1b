// `replica data encode` and `replica data decode`: dolma2 ids of a string or a text file, and the text of ids or of
// a token file. cmd_data.cc registers them with its other subcommands.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace replica::cli {

struct TextCommands {
  CLI::App* encode;
  CLI::App* decode;
  std::function<int()> run;  // runs whichever of the two was parsed
  bool parsed() const { return encode->parsed() || decode->parsed(); }
};

// Adds encode and decode as subcommands of `data`.
TextCommands add_text_commands(CLI::App& data);

}  // namespace replica::cli
