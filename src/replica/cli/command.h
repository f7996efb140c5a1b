// Subcommand registry: each cli/*.cc file registers one subcommand with a static Command object,
// so adding a subcommand never touches main.cc.
#pragma once
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
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

// A flag's number > 0 (positive_number) or ≥ 0: CLI11's PositiveNumber and NonNegativeNumber refuse 0 with "Value 0
// not in range 0.000000 to 17976931348623157…" (309 digits; reliability review, cases 112-113).
inline CLI::Validator number_at_least_zero(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(value);
        if (number && (zero_allowed ? value >= 0 : value > 0)) return "";
        return std::string("expected a number ") + (zero_allowed ? "≥ 0" : "> 0") + ", got " + text;
      },
      zero_allowed ? "NUMBER ≥ 0" : "NUMBER > 0");
}
inline const CLI::Validator positive_number = number_at_least_zero(false);
inline const CLI::Validator non_negative_number = number_at_least_zero(true);

}  // namespace replica::cli
