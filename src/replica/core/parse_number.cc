// Whole-text, range-checked integer parsing (std::from_chars: no locale, no exceptions, no leading spaces).
#include "replica/core/parse_number.h"

#include <charconv>

namespace replica {

template <typename T>
static std::optional<T> parse_whole(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<int64_t> parse_int64(std::string_view text) { return parse_whole<int64_t>(text); }
std::optional<uint64_t> parse_uint64(std::string_view text) { return parse_whole<uint64_t>(text); }
std::optional<double> parse_double(std::string_view text) { return parse_whole<double>(text); }

}  // namespace replica
