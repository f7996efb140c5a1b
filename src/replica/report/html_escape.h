// Text placed in the report's HTML and SVG: &, <, >, " and ' escaped so that labels and configs show as written.
#pragma once
#include <string>
#include <string_view>

namespace replica::report {

std::string escape_html(std::string_view text);

}  // namespace replica::report
