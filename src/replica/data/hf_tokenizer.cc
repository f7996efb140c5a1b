// dolma2 → Hugging Face tokenizer files: vocab and merges recovered from the tiktoken ranks, and the pipeline, added
// tokens' flags, special tokens and config as AI2 released them.
#include "replica/data/hf_tokenizer.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"

namespace replica::data {

namespace {

using ordered_json = nlohmann::ordered_json;

std::string utf8(uint32_t code_point) {
  if (code_point < 0x80) return std::string(1, char(code_point));
  return {char(0xC0 | (code_point >> 6)), char(0x80 | (code_point & 0x3F))};  // every code point here is < 0x800
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in byte order.
const std::array<std::string, 256>& byte_level_alphabet() {
  static const std::array<std::string, 256> alphabet = [] {
    std::array<std::string, 256> out;
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; b++) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      out[b] = utf8(printable ? b : next++);
    }
    return out;
  }();
  return alphabet;
}

std::string json_string(std::string_view text) { return nlohmann::json(std::string(text)).dump(); }

std::string_view added_token(uint32_t id) { return dolma2_added_tokens()[id - kCl100kRanks]; }

ordered_json added_tokens_json() {
  ordered_json tokens = ordered_json::array();
  for (uint32_t id = kCl100kRanks; id < kDolma2VocabSize; id++) {
    const std::string content(added_token(id));
    tokens.push_back({{"id", id},
                      {"content", content},
                      {"single_word", false},
                      {"lstrip", false},
                      {"rstrip", false},
                      {"normalized", false},
                      {"special", is_dolma2_special(content)}});
  }
  return tokens;
}

// Pieces are the regex's matches (Removed with invert: what does not match is dropped; with this pattern every
// character matches), then bytes → the byte-level alphabet, without ByteLevel's own GPT-2 regex.
ordered_json pre_tokenizer_json() {
  ordered_json split = {
      {"type", "Split"}, {"pattern", {{"Regex", kCl100kPattern}}}, {"behavior", "Removed"}, {"invert", true}};
  ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  return {{"type", "Sequence"}, {"pretokenizers", ordered_json::array({split, byte_level})}};
}

// Compact, in the key order of tokenizers' serialiser, as AI2's file is written. vocab and merges are written
// directly: ordered_json inserts an object key in linear time.
std::string tokenizer_json(const Tokenizer& tokenizer) {
  const ordered_json decoder = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  std::string out = R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":)";
  out += added_tokens_json().dump();
  out += R"(,"normalizer":null,"pre_tokenizer":)" + pre_tokenizer_json().dump();
  out += R"(,"post_processor":null,"decoder":)" + decoder.dump();
  out += R"(,"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":"",)"
         R"("end_of_word_suffix":"","fuse_unk":false,"byte_fallback":false,"vocab":{)";
  std::vector<std::string> strings(kCl100kRanks);
  for (uint32_t id = 0; id < kDolma2VocabSize; id++) {
    if (id < kCl100kRanks) strings[id] = byte_level_string(tokenizer.token_bytes(id));
    out += (id ? "," : "") + json_string(id < kCl100kRanks ? strings[id] : added_token(id)) + ":" + std::to_string(id);
  }
  out += R"(},"merges":[)";
  const std::vector<BpeMerge> merges = bpe_merges(tokenizer);
  for (size_t i = 0; i < merges.size(); i++)
    out += (i ? "," : "") + json_string(strings[merges[i].left] + " " + strings[merges[i].right]);
  return out + "]}}";
}

nlohmann::json token_flags(std::string_view content) {
  return {{"content", std::string(content)},
          {"lstrip", false},
          {"normalized", false},
          {"rstrip", false},
          {"single_word", false}};
}

// Keys sorted and indented by two, as transformers' save_pretrained writes both files.
std::string tokenizer_config_json(const Tokenizer& tokenizer, int64_t model_max_length) {
  nlohmann::json decoder = nlohmann::json::object();
  for (uint32_t id = kCl100kRanks; id < kDolma2VocabSize; id++) {
    nlohmann::json flags = token_flags(added_token(id));
    flags["special"] = is_dolma2_special(added_token(id));
    decoder[std::to_string(id)] = flags;
  }
  const std::string eos(tokenizer.token_bytes(kDolma2Eos)), pad(tokenizer.token_bytes(kDolma2Pad));
  const nlohmann::json config = {{"add_prefix_space", false},
                                 {"added_tokens_decoder", decoder},
                                 {"bos_token", eos},  // OLMo uses no BOS; AI2's files name <|endoftext|>
                                 {"clean_up_tokenization_spaces", false},
                                 {"eos_token", eos},
                                 {"extra_special_tokens", nlohmann::json::object()},
                                 {"model_max_length", model_max_length},
                                 {"pad_token", pad},
                                 {"tokenizer_class", "GPT2Tokenizer"},
                                 {"unk_token", eos}};
  return config.dump(2) + "\n";
}

std::string special_tokens_map_json(const Tokenizer& tokenizer) {
  const std::string_view eos = tokenizer.token_bytes(kDolma2Eos), pad = tokenizer.token_bytes(kDolma2Pad);
  const nlohmann::json map = {{"bos_token", token_flags(eos)},
                              {"eos_token", token_flags(eos)},
                              {"pad_token", token_flags(pad)},
                              {"unk_token", token_flags(eos)}};
  return map.dump(2) + "\n";
}

}  // namespace

std::string byte_level_string(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out += byte_level_alphabet()[uint8_t(c)];
  return out;
}

std::vector<BpeMerge> bpe_merges(const Tokenizer& tokenizer) {
  std::vector<BpeMerge> merges;
  for (uint32_t rank = 0; rank < tokenizer.num_ranks(); rank++) {
    const std::string_view token = tokenizer.token_bytes(rank);
    if (token.size() < 2) continue;
    const std::vector<uint32_t> parts = tokenizer.merge_below(token, rank);
    check(parts.size() == 2, "tokenizer ranks: token {} is not the merge of two lower-ranked tokens", rank);
    merges.push_back({parts[0], parts[1]});
  }
  return merges;
}

std::map<std::string, std::string> hf_tokenizer_files(const Tokenizer& tokenizer, int64_t model_max_length) {
  check(tokenizer.num_ranks() == kCl100kRanks, "HF tokenizer export: the ranks have {} tokens, dolma2 needs {}",
        tokenizer.num_ranks(), kCl100kRanks);
  return {{"tokenizer.json", tokenizer_json(tokenizer)},
          {"tokenizer_config.json", tokenizer_config_json(tokenizer, model_max_length)},
          {"special_tokens_map.json", special_tokens_map_json(tokenizer)}};
}

}  // namespace replica::data
