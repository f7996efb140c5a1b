// Text -> OLMo token file, as AI2's `dolma tokens` writes it: plain text (one document per file) or JSONL (one
// {"id": ..., "text": ...} object per line), optionally gzipped (.gz), each document encoded and followed by EOS, in
// input order, as uint32 — headerless (OLMo's layout, what the trainer and fingerprints of existing data expect) or
// behind a .npy header that np.load reads — with dolma's document metadata sidecar (NAME.csv.gz) beside it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/tokenizer.h"

namespace replica::data {

// How a document's text becomes ids.
enum class TextRules {
  // AI2's `dolma tokens --tokenizer.encode_special_tokens` (dolma/tokenizer/tokenizer.py, tokenize_file): the text is
  // text.strip() (Python's str.isspace whitespace), a document that is then empty is skipped, the text is encoded by
  // Tokenizer::encode_dolma (extra ids and PII masks get their ids; special tokens are text), and EOS is appended
  // unless the last id already is EOS.
  dolma,
  // Every byte as text (encode_ordinary), whitespace kept, and EOS after every document, a blank one included:
  // replica's rule before it matched dolma.
  verbatim,
};

// "dolma" | "verbatim"; raises Error naming `key` otherwise.
TextRules parse_text_rules(const std::string& text, const std::string& key);

struct TokenizeOptions {
  TextRules rules = TextRules::dolma;
  int jobs = 0;             // worker threads (<= 0: all cores); the output does not depend on it
  bool npy_header = false;  // a .npy header before the ids
  bool metadata = true;     // the sidecar, where OLMo-core looks for it: only when the output's file name has ".npy"
  bool progress = false;    // a progress line on stderr (only when it is a terminal)
};

struct TokenizeStats {
  uint64_t documents = 0;     // documents written
  uint64_t empty = 0;         // documents skipped because their stripped text is empty (TextRules::dolma)
  uint64_t without_id = 0;    // JSONL documents with no string "id" (dolma skips those; replica keeps them, id "")
  uint64_t bytes = 0;         // text bytes read
  uint64_t tokens = 0;        // tokens written, EOS included
  std::string metadata_path;  // the sidecar written, or empty
  double seconds = 0;
};

// Files ending in .jsonl or .json (then optionally .gz) are JSONL, split into lines at "\n", "\r\n" and "\r" as
// Python's text mode reads them; blank lines are skipped; anything else is one plain-text document whose id and
// source are its path. The output (and its sidecar) is the same for any `jobs` and is written to a temporary name,
// then renamed. A bad JSONL line (invalid JSON, no string "text") raises Error naming the file and line; nothing is
// written then.
TokenizeStats tokenize_files(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                             const std::string& output, const TokenizeOptions& options = {});

}  // namespace replica::data
