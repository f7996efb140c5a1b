// Glob expansion through glob(3).
#include "replica/core/glob.h"

#include <fmt/core.h>
#include <glob.h>

#include <filesystem>

#include "replica/core/error.h"

namespace replica {

std::vector<std::string> glob_matches(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t matches{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &matches);
  for (size_t i = 0; rc == 0 && i < matches.gl_pathc; i++) out.push_back(matches.gl_pathv[i]);
  globfree(&matches);
  return out;
}

std::string resolved_against(const std::string& path) {
  if (std::filesystem::path(path).is_absolute()) return "";
  return fmt::format(" (resolved against the current directory {}, not the recipe's)",
                     std::filesystem::current_path().string());
}

std::vector<std::string> expand_globs(const std::vector<std::string>& paths, const std::string& source,
                                      const char* key) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    if (p.find_first_of("*?[") == std::string::npos || p.find("://") != std::string::npos) {  // a URL: as it is
      out.push_back(p);
      continue;
    }
    const std::vector<std::string> matches = glob_matches(p);
    check(!matches.empty(), "{}: '{}': no file matches {}{}", source, key, p, resolved_against(p));
    out.insert(out.end(), matches.begin(), matches.end());
  }
  return out;
}

}  // namespace replica
