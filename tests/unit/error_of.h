// The message of the replica::Error that a call raises ("" if none): how the tests check that a refusal names
// what is wrong. Shared, since the unit tests are compiled eight files to a translation unit (tests/CMakeLists.txt).
#pragma once
#include <string>

#include "replica/core/error.h"

namespace replica {

template <typename Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace replica
