// Splitting token files into documents.
#include "replica/eval/document_ranges.h"

namespace replica::eval {

std::vector<DocRange> split_documents(const data::TokenFile& file, uint32_t eos, bool with_eos, int64_t max_docs) {
  std::vector<DocRange> docs;
  uint64_t begin = 0;
  const uint64_t n = file.num_tokens();
  for (uint64_t i = 0; i < n && (max_docs <= 0 || int64_t(docs.size()) < max_docs); i++) {
    if (file.at(i) != eos) continue;
    docs.push_back({begin, with_eos ? i + 1 : i});
    begin = i + 1;
  }
  if (begin < n && (max_docs <= 0 || int64_t(docs.size()) < max_docs)) docs.push_back({begin, n});
  return docs;
}

std::vector<int32_t> read_tokens(const data::TokenFile& file, DocRange r, uint32_t vocab_size) {
  std::vector<int32_t> ids(r.end - r.begin);
  if (!ids.empty()) file.read(r.begin, r.end - r.begin, ids.data(), vocab_size);
  return ids;
}

}  // namespace replica::eval
