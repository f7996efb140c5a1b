// replica::Error: bad input (a file, a key, a shape) with a message that names it and what was expected.
// The CLI prints the message and exits with status 2.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace replica {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// check(cond, ...) raises replica::Error with the formatted message when cond is false.
template <typename... Args>
void check(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace replica
