// Text -> OLMo token file: plain text (one document per file) or JSONL ({"text": ...} per line), each
// document encoded with encode_ordinary and followed by EOS, in input order, as uint32: headerless (OLMo's layout,
// what the trainer and fingerprints of existing data expect) or behind a .npy header that np.load reads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/tokenizer.h"

namespace replica::data {

struct TokenizeStats {
  uint64_t documents = 0, bytes = 0, tokens = 0;  // tokens include one EOS per document
  double seconds = 0;
};

// Files ending in .jsonl or .json are JSONL; anything else is one plain-text document. The output is the
// same for any `jobs` (<= 0: all cores) and is written to output.tmp, then renamed. A bad JSONL line raises
// Error naming the file and line; nothing is written then.
TokenizeStats tokenize_files(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                             const std::string& output, int jobs, bool npy_header = false, bool progress = false);

}  // namespace replica::data
