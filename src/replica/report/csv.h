// A CSV reader after RFC 4180: comma-separated fields, optionally in double quotes, where a quoted field may hold
// commas, newlines and doubled quotes (""); empty fields are empty strings; LF or CRLF line ends.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace replica::report {

struct CsvRow {
  int64_t line = 0;  // the line it starts on (1-based), for error messages
  std::vector<std::string> fields = {};
};

// Every row of `text`, the header first; a stray quote or an unterminated quoted field raises replica::Error naming
// `path` and the line.
std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path);

}  // namespace replica::report
