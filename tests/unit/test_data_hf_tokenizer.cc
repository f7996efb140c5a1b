// data/hf_tokenizer: the byte-level alphabet, the merges recovered from the ranks, and the files' fields. The whole
// tokenizer.json against AI2's file and an independent BPE is tests/integration/ckpt_hf_tokenizer.sh.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/data/hf_tokenizer.h"
#include "scratch_dir.h"

namespace replica::data {
namespace {

const Tokenizer& cl100k() {
  static Tokenizer t = Tokenizer::load(std::string(REPLICA_SOURCE_DIR) + "/tests/fixtures/data/cl100k_base.tiktoken");
  return t;
}

TEST(HfTokenizer, ByteLevelAlphabetIsGpt2s) {
  EXPECT_EQ(byte_level_string("Az~"), "Az~");    // printable ASCII is itself
  EXPECT_EQ(byte_level_string(" "), "\u0120");   // Ġ: byte 32 is the 33rd non-printable
  EXPECT_EQ(byte_level_string("\n"), "\u010A");  // Ċ
  EXPECT_EQ(byte_level_string(std::string(1, '\0')), "\u0100");
  EXPECT_EQ(byte_level_string("\x7f"), "\u0121");            // DEL follows the 33 controls and space
  EXPECT_EQ(byte_level_string("\xad"), "\u0143");            // the soft hyphen is the last, 256 + 67
  EXPECT_EQ(byte_level_string("\xc3\xa9"), "\u00C3\u00A9");  // é's two UTF-8 bytes, each printable Latin-1
}

TEST(HfTokenizer, EveryTokenIsTheMergeOfItsRecoveredPair) {
  const std::vector<BpeMerge> merges = bpe_merges(cl100k());
  ASSERT_EQ(merges.size(), kCl100kRanks - 256);  // every token but the 256 single bytes
  for (size_t i = 0; i < merges.size(); i++) {
    const uint32_t rank = uint32_t(256 + i);
    ASSERT_LT(merges[i].left, rank);
    ASSERT_LT(merges[i].right, rank);
    ASSERT_EQ(std::string(cl100k().token_bytes(merges[i].left)) + std::string(cl100k().token_bytes(merges[i].right)),
              cl100k().token_bytes(rank))
        << rank;
  }
  EXPECT_EQ(cl100k().token_bytes(merges[0].left), " ");  // rank 256 is two spaces
  EXPECT_EQ(cl100k().token_bytes(merges[0].right), " ");
}

TEST(HfTokenizer, ConfigFilesNameDolma2sTokens) {
  const auto files = hf_tokenizer_files(cl100k(), 8192);
  ASSERT_EQ(files.size(), 3u);
  const auto config = nlohmann::json::parse(files.at("tokenizer_config.json"));
  EXPECT_EQ(config["model_max_length"], 8192);
  EXPECT_EQ(config["eos_token"], "<|endoftext|>");
  EXPECT_EQ(config["pad_token"], "<|pad|>");
  EXPECT_EQ(config["added_tokens_decoder"].size(), 22u);
  EXPECT_EQ(config["added_tokens_decoder"]["100261"]["content"], "|||PHONE_NUMBER|||");
  EXPECT_FALSE(config["added_tokens_decoder"]["100261"]["special"]);
  EXPECT_TRUE(config["added_tokens_decoder"]["100276"]["special"]);
  const auto tokenizer = nlohmann::json::parse(files.at("tokenizer.json"));
  EXPECT_EQ(tokenizer["model"]["vocab"].size(), kDolma2VocabSize);
  EXPECT_EQ(tokenizer["model"]["vocab"]["\u0120the"], 279);
  EXPECT_EQ(tokenizer["model"]["merges"][0], "\u0120 \u0120");
  EXPECT_EQ(tokenizer["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"], kCl100kPattern);
  EXPECT_EQ(nlohmann::json::parse(files.at("special_tokens_map.json"))["unk_token"]["content"], "<|endoftext|>");
}

TEST(HfTokenizer, RefusesRanksThatAreNotCl100k) {
  const std::string path = (replica::testing::scratch_dir("hf_tokenizer") / "tiny.tiktoken").string();
  std::string ranks;  // the 256 single bytes and nothing else
  static const char* kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int b = 0; b < 256; b++)  // one byte in base64: two characters and "=="
    ranks += std::string{kBase64[b >> 2], kBase64[(b & 3) << 4], '=', '='} + " " + std::to_string(b) + "\n";
  write_text_file_atomic(path, ranks);
  const Tokenizer bytes_only = Tokenizer::load(path, /*verify=*/false);
  EXPECT_TRUE(bpe_merges(bytes_only).empty());
  EXPECT_THROW(hf_tokenizer_files(bytes_only, 128), Error);
}

}  // namespace
}  // namespace replica::data
