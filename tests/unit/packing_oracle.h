// The numpy oracle of packed data (tools/reference/packing_ref.py, OLMo-core's packing transcribed): runs it on the
// same files and compares a PackedDataset with it instance by instance, tokens and document lengths.
#pragma once
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "replica/core/npy.h"
#include "replica/data/packed_dataset.h"
#include "replica/data/tokenizer.h"

namespace replica::data {

// One configuration the oracle packs: sequence length, source group size, the permutation of the sources (none, or
// its seed), the long-document rule and the token files' dtype.
struct PackingCase {
  int64_t seq_len, group_size;
  std::optional<int64_t> permutation_seed;
  LongDocStrategy strategy;
  TokenDtype dtype;

  // uint16 files cannot hold the Dolma 2 ids, so they use OLMo-core's test ids: EOS 0, pad -1, 32,000 tokens.
  bool u16() const { return dtype == TokenDtype::u16; }
  uint32_t eos() const { return u16() ? 0 : kDolma2Eos; }
  int32_t pad() const { return u16() ? -1 : int32_t(kDolma2Pad); }
  uint32_t vocab() const { return u16() ? 32000 : kDolma2VocabSize; }

  // packing_ref.py's `pack` arguments after OUT_DIR for these files, documents cut at "eos" or by "metadata".
  std::string oracle_arguments(const std::vector<std::string>& paths, const char* boundaries) const {
    std::string args = fmt::format("{} {} {} {} {} {} {} {}", seq_len, group_size, long_doc_strategy_name(strategy),
                                   permutation_seed ? std::to_string(*permutation_seed) : "none", eos(), pad(),
                                   token_dtype_name(dtype), boundaries);
    for (const std::string& p : paths) args += " " + p;
    return args;
  }
};

// `arguments`: everything packing_ref.py's `pack` takes after OUT_DIR (SEQ_LEN GROUP_SIZE ... FILE...).
inline void expect_packing_oracle_matches(const PackedDataset& set, const std::string& out_dir,
                                          const std::string& arguments) {
  std::filesystem::create_directories(out_dir);
  const std::string command = "/usr/bin/python3 " + std::string(REPLICA_SOURCE_DIR) +
                              "/tools/reference/packing_ref.py pack " + out_dir + " " + arguments;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<int64_t> shape;
  const std::vector<int64_t> ids = read_npy_ids(out_dir + "/input_ids.npy", &shape);
  const std::vector<int64_t> lens = read_npy_ids(out_dir + "/doc_lens.npy", nullptr);
  const std::vector<int64_t> counts = read_npy_ids(out_dir + "/doc_counts.npy", nullptr);
  ASSERT_EQ(set.num_instances(), uint64_t(shape[0]));
  const size_t L = size_t(set.seq_len());
  std::vector<int32_t> row(L);
  size_t next_len = 0;
  for (uint64_t i = 0; i < set.num_instances(); i++) {
    set.read_instance(i, row.data());
    ASSERT_EQ(std::vector<int64_t>(row.begin(), row.end()),
              std::vector<int64_t>(ids.begin() + int64_t(i * L), ids.begin() + int64_t((i + 1) * L)))
        << "instance " << i;
    const std::vector<int32_t> got = set.document_lengths(i);
    ASSERT_EQ(
        std::vector<int64_t>(got.begin(), got.end()),
        std::vector<int64_t>(lens.begin() + int64_t(next_len), lens.begin() + int64_t(next_len + size_t(counts[i]))))
        << "instance " << i;
    next_len += size_t(counts[i]);
  }
}

}  // namespace replica::data
