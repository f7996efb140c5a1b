// Glob patterns (glob(3)) expanded to the files they match, in name order.
#pragma once
#include <string>
#include <vector>

namespace replica {

// The paths matching `pattern`, sorted; empty when none does. A pattern without glob characters matches itself
// if that path exists.
std::vector<std::string> glob_matches(const std::string& pattern);

// For an error about a relative path: " (resolved against the current directory DIR, not the recipe's)"; empty for
// an absolute path. Recipes name their files relative to where replica runs (docs/training.md).
std::string resolved_against(const std::string& path);

// Entries with glob characters (data/tokens/heldout/*.npy) become the files they match, in name order; others
// stay as they are. A pattern matching nothing raises "<source>: '<key>': no file matches <pattern>" and where a relative pattern was resolved.
std::vector<std::string> expand_globs(const std::vector<std::string>& paths, const std::string& source,
                                      const char* key);

}  // namespace replica
