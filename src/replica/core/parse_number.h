// Checked conversions of outside text to numbers for parsers: the whole text must be the number and it must fit
// the type; otherwise std::nullopt, and the caller raises a replica::Error naming its file and key or offset.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace replica {

std::optional<int64_t> parse_int64(std::string_view text);    // decimal, optional leading '-'
std::optional<uint64_t> parse_uint64(std::string_view text);  // decimal digits only
std::optional<double> parse_double(std::string_view text);    // decimal or scientific ("1e-5"), inf and nan too

}  // namespace replica
