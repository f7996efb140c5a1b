// Packed documents against OLMo-core: its own test vectors (src/test/data/{utils,numpy_dataset}_test.py), numpy's
// argsort tie order, and tools/reference/packing_ref.py (OLMo-core's packing transcribed in numpy) on many random
// token files full of equal document lengths, compared instance by instance, tokens and document lengths.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <random>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/npy.h"
#include "replica/data/loader.h"
#include "replica/data/numpy_argsort.h"
#include "replica/data/obfd.h"
#include "replica/data/packed_dataset.h"
#include "packing_oracle.h"
#include "scratch_dir.h"

using namespace replica;
using namespace replica::data;

namespace {

std::filesystem::path packing_dir() { return replica::testing::scratch_dir("packing"); }

void run_packing_oracle(const std::string& args) {
  const std::string command =
      "/usr/bin/python3 " + std::string(REPLICA_SOURCE_DIR) + "/tools/reference/packing_ref.py " + args;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

template <typename T>
std::string write_file(const std::string& name, const std::vector<T>& tokens) {
  const std::string path = (packing_dir() / name).string();
  AtomicFile file(path);
  file.write(tokens.data(), tokens.size() * sizeof(T));
  file.commit();
  return path;
}

std::vector<std::vector<int32_t>> all_instances(const PackedDataset& set) {
  std::vector<std::vector<int32_t>> out(set.num_instances(), std::vector<int32_t>(size_t(set.seq_len())));
  for (uint64_t i = 0; i < set.num_instances(); i++) set.read_instance(i, out[i].data());
  return out;
}

// OLMo-core's tests use EOS 0 and pad -1 on uint16 files.
PackedDataset olmo_test_dataset(const std::vector<std::vector<uint16_t>>& files, int64_t group_size,
                                LongDocStrategy strategy) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < files.size(); i++) paths.push_back(write_file("mmap" + std::to_string(i) + ".npy", files[i]));
  return PackedDataset(mix_from_paths(paths), 8, TokenDtype::u16, 32000, {Packing::obfd, group_size, strategy}, 0, -1);
}

}  // namespace

TEST(NumpyArgsort, TieOrderMatchesNumpy) {
  // Sizes around the insertion-sort cutoff and large ones; few distinct keys, so most keys tie.
  std::mt19937_64 gen(5);
  std::vector<std::vector<int64_t>> cases;
  for (size_t n : {0, 1, 2, 15, 16, 17, 18, 100, 1000, 65537, 300000})
    for (int64_t distinct : {1, 3, 40, 1000000}) {
      std::vector<int64_t> keys(n);
      for (int64_t& k : keys) k = -int64_t(gen() % uint64_t(distinct));
      cases.push_back(keys);
    }
  std::vector<int64_t> sorted(5000), organ(5000);
  std::iota(sorted.begin(), sorted.end(), 0);
  for (size_t i = 0; i < organ.size(); i++) organ[i] = int64_t(std::min(i, organ.size() - i)) % 7;
  cases.push_back(sorted);
  cases.push_back(std::vector<int64_t>(sorted.rbegin(), sorted.rend()));
  cases.push_back(organ);
  // The default kind, and the heapsort the introsort falls back to (only adversarial inputs reach it there).
  for (const char* kind : {"quicksort", "heapsort"}) {
    auto path = [&](const char* what, size_t c) {
      return (packing_dir() / (std::string(kind) + what + std::to_string(c) + ".npy")).string();
    };
    std::string args = std::string("argsort ") + kind;
    for (size_t c = 0; c < cases.size(); c++) {
      write_npy(path("keys", c), NpyType::i64, {int64_t(cases[c].size())}, cases[c].data());
      args += " " + path("keys", c) + " " + path("order", c);
    }
    run_packing_oracle(args);
    for (size_t c = 0; c < cases.size(); c++)
      EXPECT_EQ(kind == std::string("heapsort") ? numpy_argheapsort(cases[c]) : numpy_argsort(cases[c]),
                read_npy_ids(path("order", c), nullptr))
          << kind << " case " << c << ", n = " << cases[c].size();
  }
}

TEST(InstancePacker, FollowsTheOlmoCoreExample) {
  // utils_test.py::test_instance_packer (the example of arXiv 2404.10830 Appendix B, extended).
  InstancePacker packer(8);
  EXPECT_EQ(packer.add(8), 0u);
  EXPECT_EQ(packer.add(6), 1u);
  EXPECT_EQ(packer.add(6), 2u);
  EXPECT_EQ(packer.add(4), 3u);
  EXPECT_EQ(packer.add(3), 3u);
  EXPECT_EQ(packer.add(2), 1u);
  EXPECT_EQ(packer.add(3), 4u);
  EXPECT_EQ(packer.num_bins(), 5u);
  EXPECT_THROW(InstancePacker(12), Error);
  EXPECT_THROW(packer.add(9), Error);
}

TEST(PackedDataset, MatchesOlmoCoreSourceGroupingTest) {
  // numpy_dataset_test.py::test_numpy_packed_fsl_dataset_with_source_grouping.
  PackedDataset set =
      olmo_test_dataset({{1, 2, 3, 0, 11, 12, 13, 14, 15, 0, 21, 22, 23, 24, 25, 0, 31, 32, 33, 0, 41, 42, 0},
                         {51, 52, 0, 61, 62, 63, 64, 65, 66, 67, 0},
                         {71, 72, 73, 74, 75, 76, 77, 78, 79, 0, 81, 82, 0},
                         {91, 92, 93, 94, 0}},
                        2, LongDocStrategy::truncate);
  EXPECT_EQ(all_instances(set), (std::vector<std::vector<int32_t>>{{61, 62, 63, 64, 65, 66, 67, 0},
                                                                   {11, 12, 13, 14, 15, 0, -1, -1},
                                                                   {21, 22, 23, 24, 25, 0, -1, -1},
                                                                   {1, 2, 3, 0, 31, 32, 33, 0},
                                                                   {41, 42, 0, 51, 52, 0, -1, -1},
                                                                   {71, 72, 73, 74, 75, 76, 77, 78},
                                                                   {91, 92, 93, 94, 0, 81, 82, 0}}));
  EXPECT_EQ(set.document_lengths(4), (std::vector<int32_t>{3, 3, 2}));
  EXPECT_EQ(set.document_lengths(5), (std::vector<int32_t>{8}));
  EXPECT_EQ(set.num_groups(), 2u);
  const std::vector<PackedDataset::Document> docs = set.documents(4);  // 41 42 0 from file 0, 51 52 0 from file 1
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].file, 0u);
  EXPECT_EQ(docs[0].start, 20u);
  EXPECT_EQ(docs[1].file, 1u);
  EXPECT_EQ(docs[1].start, 0u);
}

TEST(PackedDataset, MatchesOlmoCoreLongDocumentTests) {
  // numpy_dataset_test.py::test_numpy_packed_fsl_dataset, for both long-document strategies.
  const std::vector<std::vector<uint16_t>> files = {
      {1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 0, 1, 2, 0},
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1, 2, 0}};
  for (LongDocStrategy strategy : {LongDocStrategy::truncate, LongDocStrategy::fragment}) {
    SCOPED_TRACE(long_doc_strategy_name(strategy));
    const auto instances = all_instances(olmo_test_dataset(files, 1, strategy));
    ASSERT_EQ(instances.size(), 6u);
    EXPECT_EQ(instances[0], (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 0}));
    EXPECT_EQ(instances[1], (std::vector<int32_t>{1, 2, 3, 4, 5, 0, -1, -1}));
    EXPECT_EQ(instances[3], (std::vector<int32_t>{1, 2, 3, 0, 1, 2, 0, -1}));
    const std::vector<int32_t> last = strategy == LongDocStrategy::truncate
                                          ? std::vector<int32_t>{1, 2, 0, -1, -1, -1, -1, -1}
                                          : std::vector<int32_t>{9, 10, 0, 1, 2, 0, -1, -1};
    EXPECT_EQ(instances[5], last);
  }
}

TEST(PackedDataset, MatchesTheNumpyOracleOnRandomFiles) {
  // Documents of a few lengths (many equal ones, so numpy's tie order decides which lands where), lengths 1, the
  // sequence length and beyond it, tails without an EOS; several sequence lengths, groups, permutations, strategies.
  const std::vector<PackingCase> cases = {
      {8, 1, std::nullopt, LongDocStrategy::truncate, TokenDtype::u32},
      {16, 2, 123, LongDocStrategy::truncate, TokenDtype::u32},
      {64, 3, 7, LongDocStrategy::fragment, TokenDtype::u16},
      {256, 8, 123, LongDocStrategy::truncate, TokenDtype::u32},
      {1024, 8, -5, LongDocStrategy::fragment, TokenDtype::u32},
      {32, 20, std::nullopt, LongDocStrategy::truncate, TokenDtype::u16},
  };
  std::mt19937_64 gen(11);
  for (size_t c = 0; c < cases.size(); c++) {
    const PackingCase& k = cases[c];
    SCOPED_TRACE("case " + std::to_string(c));
    const uint32_t eos = k.eos();
    const uint64_t L = uint64_t(k.seq_len);
    const std::vector<uint64_t> lengths = {1, 2, 3, 5, L / 4, L / 2, L / 2 + 1, L - 1, L, L + 1, 2 * L + 3};
    std::vector<std::string> paths;
    const size_t num_files = 5 + size_t(gen() % 12);
    for (size_t f = 0; f < num_files; f++) {
      std::vector<uint32_t> tokens;
      for (size_t d = 0, docs = 1 + size_t(gen() % 60); d < docs; d++) {
        for (uint64_t t = 1, n = lengths[gen() % lengths.size()]; t < n; t++)
          tokens.push_back(1 + uint32_t(gen() % 30000));
        tokens.push_back(eos);
      }
      for (size_t t = 0, tail = gen() % 3 == 0 ? 1 + gen() % 9 : 0; t < tail; t++) tokens.push_back(7);
      const std::string name = "c" + std::to_string(c) + "_f" + std::to_string(f) + ".npy";
      paths.push_back(k.u16() ? write_file(name, std::vector<uint16_t>(tokens.begin(), tokens.end()))
                              : write_file(name, tokens));
    }
    std::vector<MixEntry> files = mix_from_paths(paths);
    if (k.permutation_seed) files = permute_mix(files, *k.permutation_seed);
    const PackedDataset set(files, k.seq_len, k.dtype, k.vocab(), {Packing::obfd, k.group_size, k.strategy}, eos,
                            k.pad());
    expect_packing_oracle_matches(set, (packing_dir() / ("oracle" + std::to_string(c))).string(),
                                  k.oracle_arguments(paths, "eos"));
  }
}

TEST(PackedDataset, LoaderBatchesCarryDocumentLengths) {
  std::vector<uint32_t> tokens;
  for (uint32_t d = 0; d < 200; d++) {
    for (uint32_t t = 0; t < d % 13; t++) tokens.push_back(100 + d);
    tokens.push_back(kDolma2Eos);
  }
  LoaderConfig config;
  config.files = mix_from_paths({write_file("loader.npy", tokens)});
  config.seq_len = 16;
  config.seed = 3;
  config.global_batch = 4;
  const DataLoader plain(config);
  EXPECT_TRUE(plain.batch(1, 0).doc_lens.empty());
  config.packing.kind = Packing::obfd;
  const DataLoader loader(config);
  ASSERT_NE(loader.packed(), nullptr);
  const Batch batch = loader.batch(1, 1, 1, 2);
  ASSERT_EQ(batch.doc_lens.size(), 2u);
  for (int64_t r = 0; r < batch.rows; r++) {
    const std::vector<int32_t>& lens = batch.doc_lens[size_t(r)];
    EXPECT_EQ(lens, loader.packed()->document_lengths(batch.instances[size_t(r)]));
    EXPECT_EQ(std::accumulate(lens.begin(), lens.end(), 0), 16);
    // Every document ends with its EOS; a non-EOS last token starts the padding.
    int32_t end = 0;
    for (int32_t len : lens) {
      end += len;
      const int32_t last = batch.tokens[size_t(r * 16 + end - 1)];
      EXPECT_TRUE(last == int32_t(kDolma2Eos) || (end == 16 && last == int32_t(kDolma2Pad)));
    }
  }
  EXPECT_NE(plain.fingerprint(), loader.fingerprint());
  LoaderConfig grouped = config;
  grouped.packing.source_group_size = 2;
  EXPECT_NE(DataLoader(grouped).fingerprint(), loader.fingerprint());
  LoaderConfig permuted = config;
  permuted.source_permutation_seed = 123;
  EXPECT_NE(DataLoader(permuted).fingerprint(), loader.fingerprint());
}

TEST(PackedDataset, RefusesASequenceLengthThatIsNotAPowerOfTwo) {
  const std::string path = write_file("pow2.npy", std::vector<uint32_t>{1, 2, kDolma2Eos});
  try {
    PackedDataset(mix_from_paths({path}), 24, TokenDtype::u32, kDolma2VocabSize, {Packing::obfd, 1, {}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("power-of-two sequence length"), std::string::npos) << e.what();
  }
}
