// data encode / decode. Text comes from --text, --file or stdin; ids are printed space-separated on one line, or
// written with --out as a token file (headerless uint32, as `data tokenize` writes, without the EOS it appends).
#include "replica/cli/data_text.h"

#include <fmt/format.h>

#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/output_guard.h"
#include "replica/data/token_file.h"
#include "replica/data/tokenizer.h"

namespace replica::cli {

namespace {

struct Options {
  std::string text, file, ids, out, tokenizer, dtype = "uint32";
  bool text_given = false, ids_given = false;  // an empty --text or --ids is still given (stdin is not read)
};

data::Tokenizer load_tokenizer(const Options& o) {
  return data::Tokenizer::load(o.tokenizer.empty() ? data::default_ranks_path() : o.tokenizer);
}

std::string read_stdin() { return std::string(std::istreambuf_iterator<char>(std::cin), {}); }

int run_encode(const Options& o) {
  if (!o.out.empty()) check_output_path("--out", o.out, {o.file});
  const std::string text = o.text_given ? o.text : !o.file.empty() ? read_text_file(o.file) : read_stdin();
  const std::vector<uint32_t> ids = load_tokenizer(o).encode_ordinary(text);
  if (o.out.empty()) {
    fmt::print("{}\n", fmt::join(ids, " "));
    return 0;
  }
  // An empty token file is refused by every command that reads one, so it is not written (as tokenize refuses
  // zero documents).
  check(!ids.empty(), "--out {}: the text to encode is empty, so there are no tokens to write", o.out);
  AtomicFile out(o.out);
  out.write(ids.data(), ids.size() * sizeof(uint32_t));
  out.commit();
  fmt::print(stderr, "{}: {} tokens (uint32)\n", o.out, ids.size());
  return 0;
}

// Ids written as text: decimal numbers separated by spaces, commas or newlines.
std::vector<uint32_t> parse_ids(const std::string& text, const std::string& source) {
  std::string spaced = text;
  for (char& ch : spaced)
    if (ch == ',') ch = ' ';
  std::istringstream in(spaced);
  std::vector<uint32_t> ids;
  for (std::string word; in >> word;) {
    size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    check(used == word.size() && word[0] != '-' && value <= UINT32_MAX, "{}: '{}' is not a token id", source, word);
    ids.push_back(uint32_t(value));
  }
  return ids;
}

int run_decode(const Options& o) {
  std::vector<uint32_t> ids;
  if (!o.file.empty()) {
    const data::TokenFile file(o.file, data::parse_token_dtype(o.dtype));
    ids.resize(size_t(file.num_tokens()));
    for (uint64_t i = 0; i < file.num_tokens(); i++) ids[size_t(i)] = file.at(i);
  } else {
    ids = o.ids_given ? parse_ids(o.ids, "--ids") : parse_ids(read_stdin(), "stdin");
  }
  const std::string text = load_tokenizer(o).decode(ids);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace

TextCommands add_text_commands(CLI::App& data) {
  auto o = std::make_shared<Options>();
  CLI::App* encode = data.add_subcommand("encode", "dolma2 ids of a string (--text, --file or stdin)");
  auto* text = encode->add_option("--text", o->text, "The text to encode");
  encode->add_option("--file", o->file, "A text file to encode, whole")->excludes(text);
  encode->add_option("--out", o->out, "Write the ids as a headerless uint32 token file instead of printing them");
  encode->add_option("--tokenizer", o->tokenizer, "cl100k_base.tiktoken (default: data/tokenizer/)");

  CLI::App* decode = data.add_subcommand("decode", "The text of ids (--ids, stdin) or of a token file (--file)");
  auto* ids = decode->add_option("--ids", o->ids, "Ids separated by spaces or commas");
  decode->add_option("--file", o->file, "A token file (headerless, or .npy with a header)")->excludes(ids);
  decode->add_option("--dtype", o->dtype, "Element type of a headerless token file (uint32 or uint16)")
      ->capture_default_str();
  decode->add_option("--tokenizer", o->tokenizer, "cl100k_base.tiktoken (default: data/tokenizer/)");

  return {encode, decode, [o, encode, text, ids] {
            o->text_given = text->count() > 0;
            o->ids_given = ids->count() > 0;
            return encode->parsed() ? run_encode(*o) : run_decode(*o);
          }};
}

}  // namespace replica::cli
