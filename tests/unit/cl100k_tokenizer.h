// The cl100k_base tokenizer of tests/fixtures/data, loaded once per test process (the tests that encode text share
// it: loading it parses its 100k merges).
#pragma once
#include <string>

#include "replica/data/tokenizer.h"

namespace replica {

// The repository's root, as the build passes it: the fixtures and the Python references are read from there.
inline const std::string kSourceDir = REPLICA_SOURCE_DIR;

inline const data::Tokenizer& cl100k_tokenizer() {
  static const data::Tokenizer t = data::Tokenizer::load(kSourceDir + "/tests/fixtures/data/cl100k_base.tiktoken");
  return t;
}

}  // namespace replica
