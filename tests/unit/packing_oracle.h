// The numpy oracle of packed data (tools/reference/packing_ref.py, OLMo-core's packing transcribed): runs it on the
// same files and compares a PackedDataset with it instance by instance, tokens and document lengths.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "replica/core/npy.h"
#include "replica/data/packed_dataset.h"

namespace replica::data {

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
