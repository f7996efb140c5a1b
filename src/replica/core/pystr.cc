// Python string semantics on UTF-8.
#include "replica/core/pystr.h"

#include <locale.h>
#include <wctype.h>

#include "replica/core/error.h"

namespace replica::py {
namespace {

// Decodes the code point at s[i] and advances i. Invalid bytes are taken as single code points (as
// Python's surrogateescape would); task files are valid UTF-8 after JSON decoding.
char32_t next(std::string_view s, size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (n == 1 || i + size_t(n) > s.size()) return char32_t(s[i++] & 0xff);
  char32_t cp = c & (0x7f >> n);
  for (int k = 1; k < n; k++) cp = (cp << 6) | (static_cast<unsigned char>(s[i + size_t(k)]) & 0x3f);
  i += size_t(n);
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

// str.isspace: Unicode White_Space plus the ASCII information separators \x1c-\x1f.
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

locale_t utf8_locale() {
  static locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));
    check(l != locale_t(0), "the C.UTF-8 locale is not available (needed for Unicode case mapping)");
    return l;
  }();
  return loc;
}

// Byte offsets of the first non-space code point and of the end of the last one.
size_t first_non_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_space(next(s, j))) break;
    i = j;
  }
  return i;
}

size_t end_non_space(std::string_view s) {
  size_t i = 0, end = 0;
  while (i < s.size()) {
    const char32_t c = next(s, i);
    if (!is_space(c)) end = i;
  }
  return end;
}

}  // namespace

int64_t len(std::string_view s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); n++) next(s, i);
  return n;
}

std::string lstrip(std::string_view s) { return std::string(s.substr(first_non_space(s))); }
std::string rstrip(std::string_view s) { return std::string(s.substr(0, end_non_space(s))); }
std::string strip(std::string_view s) { return lstrip(rstrip(s)); }

std::string capitalize(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const bool first = i == 0;
    const char32_t c = next(s, i);
    append(out, first ? char32_t(towupper_l(wint_t(c), utf8_locale())) : char32_t(towlower_l(wint_t(c), utf8_locale())));
  }
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t i = 0;
  for (size_t hit; (hit = s.find(from, i)) != std::string_view::npos; i = hit + from.size()) {
    out.append(s.substr(i, hit - i));
    out.append(to);
  }
  out.append(s.substr(i));
  return out;
}

}  // namespace replica::py
