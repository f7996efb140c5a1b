// The dolma2 tokenizer (OLMo 2/3): cl100k_base byte-level BPE plus 22 added tokens, id-identical to
// tiktoken's encode_ordinary. Ranks come from the pinned cl100k_base.tiktoken file (sha256 checked).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace replica::data {

constexpr uint32_t kDolma2VocabSize = 100278;  // 100256 BPE ranks + 22 added tokens
constexpr uint32_t kDolma2Eos = 100257;        // <|endoftext|>, appended after every document
constexpr uint32_t kDolma2Pad = 100277;        // <|pad|>
constexpr uint32_t kCl100kRanks = 100256;

// sha256 of OpenAI's cl100k_base.tiktoken (the hash tiktoken itself pins).
inline constexpr const char* kCl100kSha256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7";

// Where the ranks are looked for when no path is given: $REPLICA_TOKENIZER, then
// data/tokenizer/cl100k_base.tiktoken (written by scripts/fetch-data.sh), then the copy committed
// under tests/fixtures/data/ (both relative to the working directory).
std::string default_ranks_path();

// The cl100k pre-tokenisation regex as tiktoken writes it (and Hugging Face's tokenizer.json carries it).
inline constexpr const char* kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Pre-tokenisation: kCl100kPattern (as tokenizer.cc spells it for PCRE2), compiled with PCRE2 JIT in UTF mode with
// Unicode properties.
// Invalid UTF-8 (defined behaviour, byte-preserving): the regex runs with PCRE2_MATCH_INVALID_UTF, so
// no piece ever contains or crosses an ill-formed byte sequence; each maximal run of bytes that no
// regex piece covers (always ill-formed bytes only) becomes a piece of its own and is BPE-encoded as
// raw bytes. Hence decode(encode_ordinary(s)) == s for every byte string s, and valid text is
// unaffected. A lone invalid byte between two letters therefore splits the word.
class Tokenizer {
 public:
  // Loads the ranks file and checks its sha256 against kCl100kSha256 (verify = false skips the check,
  // for tests that build tiny rank files).
  static Tokenizer load(const std::string& ranks_path, bool verify = true);
  static Tokenizer load_default() { return load(default_ranks_path()); }

  Tokenizer(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Ids of `text` with added tokens' text (e.g. "<|endoftext|>") encoded as ordinary text.
  std::vector<uint32_t> encode_ordinary(std::string_view text) const;
  void encode_ordinary(std::string_view text, std::vector<uint32_t>& out) const;  // appends
  // encode_ordinary's ids as the model reads them (int32: every id of a vocabulary below 2³¹).
  std::vector<int32_t> encode_model_input(std::string_view text) const;
  // Appends the ids of `text` as AI2's `dolma tokens --tokenizer.encode_special_tokens` encodes it (Hugging Face
  // tokenizers over allenai_dolma2.json): the added tokens that are not special — <|extra_id_N|> and Dolma's PII
  // masks |||PHONE_NUMBER|||, |||EMAIL_ADDRESS|||, |||IP_ADDRESS||| — are matched and get their ids; the special ones
  // (<|endoftext|>, <|pad|>, ...) and everything else are encoded as ordinary text.
  void encode_dolma(std::string_view text, std::vector<uint32_t>& out) const;

  // Bytes of `ids` (BPE tokens as bytes, added tokens as their text). Raises Error for id >= vocab_size.
  std::string decode(std::span<const uint32_t> ids) const;
  std::string_view token_bytes(uint32_t id) const;

  // The BPE ranks: ids below num_ranks().
  uint32_t num_ranks() const;
  // tiktoken's merge of `bytes` (1..128 of them) using only ranks below rank_limit. For a token's bytes and its own
  // rank this gives the two parts whose merge makes it: its entry in a Hugging Face merges list.
  std::vector<uint32_t> merge_below(std::string_view bytes, uint32_t rank_limit) const;

  uint32_t vocab_size() const { return kDolma2VocabSize; }
  // Id of an added token by content ("<|endoftext|>" -> 100257); raises Error when unknown.
  uint32_t added_token_id(std::string_view content) const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// dolma2's added tokens, in id order 100256..100277.
std::span<const std::string_view> dolma2_added_tokens();
// Whether AI2 marks the added token `content` "special": true (8 of the 22; the rest are plain added tokens).
bool is_dolma2_special(std::string_view content);

}  // namespace replica::data
