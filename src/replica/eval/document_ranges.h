// Documents of a token file: the EOS-separated runs of ids (OLMo layout), as [begin, end) token ranges.
#pragma once
#include <cstdint>
#include <vector>

#include "replica/data/token_file.h"

namespace replica::eval {

struct DocRange {
  uint64_t begin = 0, end = 0;  // tokens [begin, end); `with_eos` ranges include the closing EOS
};

// Every document in file order, at most `max_docs` (0 = all). A trailing run without EOS is a document too.
std::vector<DocRange> split_documents(const data::TokenFile& file, uint32_t eos, bool with_eos, int64_t max_docs);

// Ids [r.begin, r.end) of `file`, checked against `vocab_size`.
std::vector<int32_t> read_tokens(const data::TokenFile& file, DocRange r, uint32_t vocab_size);

}  // namespace replica::eval
