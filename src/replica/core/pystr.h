// Python str semantics that replica's references depend on (lm-eval's task formats, dolma's `text.strip()`), on UTF-8
// strings: len (code points), strip/lstrip/rstrip (str.isspace whitespace), capitalize (first code point upper —
// Python title-cases it, which differs only for the four digraph letters — the rest lower), replace. Case mapping
// uses the C library's Unicode tables (C.UTF-8 locale).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace replica::py {

int64_t len(std::string_view s);
std::string strip(std::string_view s);
std::string lstrip(std::string_view s);
std::string rstrip(std::string_view s);
std::string capitalize(std::string_view s);
std::string replace(std::string_view s, std::string_view from, std::string_view to);  // every occurrence, one pass

}  // namespace replica::py
