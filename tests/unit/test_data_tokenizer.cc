// Tokenizer parity: ids equal to tiktoken's cl100k_base (golden TestPlans, a tiktoken-WASM sample, every code
// point), byte-exact decode, the defined invalid-UTF-8 behaviour, and clear errors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cl100k_tokenizer.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/sha256.h"
#include "replica/data/document_metadata.h"
#include "replica/data/tokenize.h"
#include "replica/data/tokenizer.h"
#include "scratch_dir.h"

using namespace replica;
using namespace replica::data;

namespace {

const std::string kFixtures = std::string(REPLICA_SOURCE_DIR) + "/tests/fixtures/data/";

std::vector<uint32_t> parse_ids(const std::string& list) {  // "[1, 2, 3]"
  std::vector<uint32_t> ids;
  for (auto& v : nlohmann::json::parse(list)) ids.push_back(v.get<uint32_t>());
  return ids;
}

// The probe tools/data/make_tokenizer_fixture.cjs builds for one code point, as UTF-8.
std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xc0 | (cp >> 6)), s += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += char(0xe0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3f)), s += char(0x80 | (cp & 0x3f));
  } else {
    s += char(0xf0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3f)), s += char(0x80 | ((cp >> 6) & 0x3f));
    s += char(0x80 | (cp & 0x3f));
  }
  return s;
}

std::string probe(uint32_t cp) {
  std::string c = utf8(cp);
  return "a" + c + "b1" + c + "2 " + c + "'" + c + "ll\n" + c + c + "  " + c + "\r\n";
}

}  // namespace

TEST(Tokenizer, LoadsPinnedRanks) {
  const Tokenizer& t = cl100k_tokenizer();
  EXPECT_EQ(t.vocab_size(), 100278u);
  EXPECT_EQ(t.token_bytes(0), "!");
  EXPECT_EQ(t.token_bytes(100255), " Conveyor");
  EXPECT_EQ(t.token_bytes(kDolma2Eos), "<|endoftext|>");
  EXPECT_EQ(t.token_bytes(kDolma2Pad), "<|pad|>");
  EXPECT_EQ(t.token_bytes(100261), "|||PHONE_NUMBER|||");
  EXPECT_EQ(t.token_bytes(100275), "<|extra_id_10|>");
  EXPECT_EQ(t.added_token_id("<|endofprompt|>"), 100276u);
  EXPECT_EQ(dolma2_added_tokens().size(), 22u);
  EXPECT_THROW(t.token_bytes(100278), Error);
  EXPECT_THROW(t.added_token_id("<|nope|>"), Error);
}

TEST(Tokenizer, RejectsWrongRanksFile) {
  std::string path = (replica::testing::scratch_dir("tokenizer") / "bad.tiktoken").string();
  write_text_file_atomic(path, "IQ== 0\n");
  try {
    Tokenizer::load(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sha256"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tokenizer::load((replica::testing::scratch_dir("tokenizer") / "missing.tiktoken").string()), Error);
}

TEST(Tokenizer, GoldenTestPlans) {
  std::string text = read_text_file(kFixtures + "TestPlans.txt");
  ASSERT_EQ(sha256_hex(text.data(), text.size()), "d0a7902a3b2ef9ad950044663c21426323a2c860df72c9c0e73c0c03a68e7169");
  std::istringstream in(text);
  std::string line, encoding, sample;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.rfind("EncodingName: ", 0) == 0) encoding = line.substr(14);
    if (line.rfind("Sample: ", 0) == 0) sample = line.substr(8);
    if (line.rfind("Sample:", 0) == 0 && line.size() == 7) sample.clear();
    if (line.rfind("Encoded: ", 0) == 0 && encoding == "cl100k_base") {
      EXPECT_EQ(cl100k_tokenizer().encode_ordinary(sample), parse_ids(line.substr(9))) << sample;
      cases++;
    }
  }
  EXPECT_EQ(cases, 64);
}

TEST(Tokenizer, TiktokenWasmSample) {
  std::ifstream in(kFixtures + "tokenizer_sample.jsonl");
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    std::string text = j["text"];
    std::vector<uint32_t> expected = j["ids"];
    auto ids = cl100k_tokenizer().encode_ordinary(text);
    EXPECT_EQ(ids, expected) << j["name"];
    EXPECT_EQ(cl100k_tokenizer().decode(ids), text) << j["name"];
    cases++;
  }
  EXPECT_GE(cases, 40);
}

TEST(Tokenizer, EveryCodePointMatchesTiktoken) {
  std::ifstream in(kFixtures + "tokenizer_codepoints.txt");
  uint32_t first, last;
  std::string digest;
  int blocks = 0;
  std::vector<uint32_t> ids;
  while (in >> first >> last >> digest) {
    std::string text;
    for (uint32_t cp = first; cp <= last; cp++)
      if (cp < 0xd800 || cp > 0xdfff) text += probe(cp);
    ids.clear();
    cl100k_tokenizer().encode_ordinary(text, ids);
    EXPECT_EQ(sha256_hex(ids.data(), ids.size() * 4), digest) << "code points " << first << ".." << last;
    blocks++;
  }
  EXPECT_EQ(blocks, 272);
}

TEST(Tokenizer, AddedTokenTextIsOrdinary) {
  auto ids = cl100k_tokenizer().encode_ordinary("<|endoftext|>");
  EXPECT_EQ(ids, (std::vector<uint32_t>{27, 91, 8862, 728, 428, 91, 29}));
  EXPECT_EQ(std::find(ids.begin(), ids.end(), kDolma2Eos), ids.end());
}

TEST(Tokenizer, InvalidUtf8IsByteExactAndDefined) {
  const Tokenizer& t = cl100k_tokenizer();
  // A lone 0xff splits the word: "ab", <0xff>, "cd".
  auto ids = t.encode_ordinary("ab\xff" "cd");
  std::vector<uint32_t> expected = t.encode_ordinary("ab");
  expected.push_back(t.encode_ordinary("ab\xff")[1]);
  for (auto id : t.encode_ordinary("cd")) expected.push_back(id);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(t.decode(ids), "ab\xff" "cd");
  // Truncated multi-byte sequences, overlong forms, surrogates and random bytes all round-trip.
  for (std::string s : {std::string("\xe4\xb8"), std::string("x\xc0\xafy"), std::string("\xed\xa0\x80 z"),
                        std::string("caf\xc3"), std::string("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80")})
    EXPECT_EQ(t.decode(t.encode_ordinary(s)), s);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; trial++) {
    std::string s(rng() % 300, '\0');
    for (char& c : s) c = char(rng() % 4 == 0 ? rng() % 256 : "ab \n1'\xc3\xa9"[rng() % 9]);
    EXPECT_EQ(t.decode(t.encode_ordinary(s)), s);
  }
}

TEST(Tokenizer, LongPiecesUseTheSameMergeOrder) {
  // Pieces longer than 128 bytes take the heap merge; compare with the short-piece path piecewise.
  const Tokenizer& t = cl100k_tokenizer();
  std::string word;
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; i++) word += "etaoinshrdlucmfw"[rng() % 16];
  auto ids = t.encode_ordinary(word);
  EXPECT_EQ(t.decode(ids), word);
  std::string digits(1000, '7');
  EXPECT_EQ(t.encode_ordinary(digits).size(), 334u);  // groups of 3: 333 x "777" + "7"
}

TEST(Tokenizer, HugeWhitespaceRunsAreNotARegexError) {
  // 6 MB of blanks is one piece; PCRE2's default match limit (10 M steps) would reject it.
  std::string blanks(6 << 20, ' ');
  blanks += "x";
  auto ids = cl100k_tokenizer().encode_ordinary(blanks);
  EXPECT_EQ(cl100k_tokenizer().decode(ids), blanks);
  EXPECT_EQ(ids.back(), cl100k_tokenizer().encode_ordinary(" x")[0]);  // the last blank goes with the word
}

// Reliability review D14: an input with no documents wrote a 0-byte token file (exit 0) that every reader refuses.
TEST(Tokenize, InputsWithoutDocumentsWriteNothing) {
  const std::filesystem::path dir = replica::testing::scratch_dir("tokenize");
  const std::string input = (dir / "blank.jsonl").string(), output = (dir / "out.npy").string();
  std::ofstream(input) << "\n  \n";
  try {
    tokenize_files(cl100k_tokenizer(), {input}, output, {.jobs = 1});
    FAIL() << "expected replica::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), input + ": no documents to tokenize (every input is empty or blank)");
  }
  EXPECT_FALSE(std::filesystem::exists(output));
  EXPECT_FALSE(std::filesystem::exists(output + ".tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out.csv.gz"));
}

// dolma's encode (HF tokenizers, encode_special_tokens): plain added tokens are matched, special ones are text.
// tests/integration/data_tokenize_dolma.sh checks the same rules against Hugging Face's own tokenizers.
TEST(Tokenizer, DolmaEncodeMatchesPlainAddedTokensOnly) {
  const Tokenizer& t = cl100k_tokenizer();
  auto dolma = [&](std::string_view text) {
    std::vector<uint32_t> ids;
    t.encode_dolma(text, ids);
    return ids;
  };
  auto ordinary = [&](std::string_view text) { return t.encode_ordinary(text); };
  auto concat = [](std::vector<std::vector<uint32_t>> parts) {
    std::vector<uint32_t> out;
    for (auto& part : parts) out.insert(out.end(), part.begin(), part.end());
    return out;
  };
  EXPECT_EQ(dolma("call |||PHONE_NUMBER||| now"),
            concat({ordinary("call "), {t.added_token_id("|||PHONE_NUMBER|||")}, ordinary(" now")}));
  // Special tokens stay text, exactly as encode_ordinary spells them.
  EXPECT_EQ(dolma("a<|endoftext|>b<|pad|><|im_start|>"), ordinary("a<|endoftext|>b<|pad|><|im_start|>"));
  // The longest token at the leftmost start: <|extra_id_10|>, not <|extra_id_1|> and "0|>".
  EXPECT_EQ(dolma("x<|extra_id_10|><|extra_id_1|>"),
            concat({ordinary("x"), {t.added_token_id("<|extra_id_10|>"), t.added_token_id("<|extra_id_1|>")}}));
  EXPECT_EQ(t.added_token_id("<|extra_id_0|>"), 100256u);
  // Matches do not overlap: the PHONE mask takes the shared "|||", so EMAIL_ADDRESS||| is text.
  EXPECT_EQ(dolma("|||PHONE_NUMBER|||EMAIL_ADDRESS|||"),
            concat({{t.added_token_id("|||PHONE_NUMBER|||")}, ordinary("EMAIL_ADDRESS|||")}));
  EXPECT_EQ(dolma("||IP_ADDRESS|||"), ordinary("||IP_ADDRESS|||"));
  EXPECT_EQ(dolma("plain text"), ordinary("plain text"));
  EXPECT_TRUE(dolma("").empty());
}

TEST(Tokenize, DolmaStripsSkipsEmptyAndWritesTheSidecar) {
  const std::filesystem::path dir = replica::testing::scratch_dir("tokenize_dolma");
  const std::string input = (dir / "docs.jsonl").string(), output = (dir / "out.npy").string();
  std::ofstream(input) << "{\"id\": \"a,1\", \"text\": \"\\u00a0 hi \\n\"}\r\n"
                       << "{\"id\": \"b\", \"text\": \" \\u3000\\t\"}\n\n"
                       << "{\"text\": \"|||EMAIL_ADDRESS|||\"}\r"
                       << "{\"id\": \"say \\\"x\\\"\", \"text\": \"x\"}";
  const TokenizeStats stats = tokenize_files(cl100k_tokenizer(), {input}, output, {.jobs = 2});
  EXPECT_EQ(stats.documents, 3u);
  EXPECT_EQ(stats.empty, 1u);
  EXPECT_EQ(stats.without_id, 1u);
  const uint32_t eos = kDolma2Eos;
  std::vector<uint32_t> expected = cl100k_tokenizer().encode_ordinary("hi");
  expected.push_back(eos);
  expected.push_back(cl100k_tokenizer().added_token_id("|||EMAIL_ADDRESS|||"));
  expected.push_back(eos);
  for (uint32_t id : cl100k_tokenizer().encode_ordinary("x")) expected.push_back(id);
  expected.push_back(eos);
  const std::vector<char> bytes = replica::read_file(output);
  ASSERT_EQ(bytes.size(), expected.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), bytes.size()), 0);
  ASSERT_EQ(stats.metadata_path, (dir / "out.csv.gz").string());
  const std::vector<char> gz = replica::read_file(stats.metadata_path);
  const size_t a = expected.size() - 4, b = expected.size() - 2;
  EXPECT_EQ(gunzip(gz, "sidecar"), fmt::format("0,{},\"a,1\",{},1\r\n{},{},,{},4\r\n{},{},\"say \"\"x\"\"\",{},5\r\n", a,
                                              input, a, b, input, b, expected.size(), input));
}
