// Glob patterns (glob(3)) expanded to the files they match, in name order.
#pragma once
#include <string>
#include <vector>

namespace replica {

// The paths matching `pattern`, sorted; empty when none does. A pattern without glob characters matches itself
// if that path exists.
std::vector<std::string> glob_matches(const std::string& pattern);

// Entries with glob characters (data/tokens/heldout/*.npy) become the files they match, in name order; others
// stay as they are. A pattern matching nothing raises "<source>: '<key>': no file matches <pattern>".
std::vector<std::string> expand_globs(const std::vector<std::string>& paths, const std::string& source,
                                      const char* key);

}  // namespace replica
