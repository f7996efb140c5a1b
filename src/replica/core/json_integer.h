// Integers read from JSON files that outside hands can reach (train_state.json, MANIFEST.json): nlohmann's get<>
// converts a float (1e83: undefined behaviour; 2.5: silently 2) and wraps a negative value into an unsigned type.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "replica/core/error.h"

namespace replica {

// object[key] as an integer in [min, max]; missing, another kind of value or out of range raises Error naming
// `source` and the key.
inline int64_t json_integer(const nlohmann::json& object, const char* key, const std::string& source,
                            int64_t min = std::numeric_limits<int64_t>::min(),
                            int64_t max = std::numeric_limits<int64_t>::max()) {
  check(object.is_object() && object.contains(key), "{}: '{}' is missing", source, key);
  const nlohmann::json& v = object[key];
  const bool integral =
      v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX));
  check(integral && v.get<int64_t>() >= min && v.get<int64_t>() <= max,
        "{}: '{}' is {}, expected an integer in [{}, {}]", source, key, v.dump(), min, max);
  return v.get<int64_t>();
}

}  // namespace replica
