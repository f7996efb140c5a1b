// What `replica --version` prints: the commit the binary was built from (git describe, "-dirty" with uncommitted
// changes) and the build's flags. Written at build time by cmake/write_version.cmake.
#pragma once

namespace replica::cli {

extern const char* const kBuildCommit;
extern const char* const kBuildFlags;

}  // namespace replica::cli
