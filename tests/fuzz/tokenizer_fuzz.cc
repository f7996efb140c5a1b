// Fuzzes the tokenizer on arbitrary bytes with the property it documents: decode(encode_ordinary(s)) == s,
// and every id is inside the vocabulary.
#include <string_view>

#include "fuzz_input.h"
#include "replica/data/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  static const data::Tokenizer tokenizer =
      data::Tokenizer::load(REPLICA_SOURCE_DIR "/tests/fixtures/data/cl100k_base.tiktoken");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<uint32_t> ids = tokenizer.encode_ordinary(text);
  for (uint32_t id : ids)
    if (id >= tokenizer.vocab_size()) fuzz::property_failed("encode_ordinary gave an id outside the vocabulary");
  if (tokenizer.decode(ids) != text) fuzz::property_failed("decode(encode_ordinary(s)) != s");
  return 0;
}
