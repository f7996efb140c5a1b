// Packed documents whose boundaries come from Dolma's `.csv.gz` sidecars (data.document_boundaries: metadata):
// sidecars at the EOS positions pack exactly as EOS boundaries do; sidecars that disagree with the EOS positions
// pack by the metadata and give EOS-scan document lengths, instance by instance as tools/reference/packing_ref.py
// (OLMo-core's metadata path transcribed in numpy and gzip); the fingerprint and the packing cache follow the
// sidecars.
#include <gtest/gtest.h>
#include <zlib.h>

#include <numeric>
#include <random>

#include "error_of.h"
#include "packing_oracle.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/data/loader.h"
#include "replica/data/packed_dataset.h"
#include "scratch_dir.h"

using namespace replica;
using namespace replica::data;

namespace {

std::filesystem::path metadata_dir() { return replica::testing::scratch_dir("packing_metadata"); }

template <typename T>
std::string write_tokens(const std::string& name, const std::vector<T>& tokens) {
  const std::string path = (metadata_dir() / name).string();
  AtomicFile file(path);
  file.write(tokens.data(), tokens.size() * sizeof(T));
  file.commit();
  return path;
}

// The sidecar of `token_path` listing `documents`, one `start,end,<id>` line each, gzipped by zlib.
void write_sidecar(const std::string& token_path, const std::vector<std::pair<uint64_t, uint64_t>>& documents) {
  std::string text;
  for (const auto& [start, end] : documents) text += fmt::format("{},{},doc-{}\n", start, end, start);
  const std::string path = document_metadata_path(token_path);
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr) << path;
  if (!text.empty()) {
    ASSERT_EQ(gzwrite(out, text.data(), unsigned(text.size())), int(text.size()));
  }
  ASSERT_EQ(gzclose(out), Z_OK);
}

// Random EOS-terminated documents of a few lengths (many equal), some longer than seq_len, some files with a tail.
std::vector<uint32_t> random_tokens(std::mt19937_64& gen, uint64_t seq_len, uint32_t eos) {
  const std::vector<uint64_t> lengths = {1,           2,       3,           seq_len / 4,    seq_len / 2,
                                         seq_len - 1, seq_len, seq_len + 1, 2 * seq_len + 3};
  std::vector<uint32_t> tokens;
  for (size_t d = 0, docs = 1 + gen() % 40; d < docs; d++) {
    for (uint64_t t = 1, n = lengths[gen() % lengths.size()]; t < n; t++) tokens.push_back(1 + uint32_t(gen() % 30000));
    tokens.push_back(eos);
  }
  for (size_t t = 0, tail = gen() % 3 == 0 ? 1 + gen() % 9 : 0; t < tail; t++) tokens.push_back(7);
  return tokens;
}

// What OLMo-core's write_document_indices writes: one document per EOS, [previous end, EOS + 1).
std::vector<std::pair<uint64_t, uint64_t>> eos_documents(const std::vector<uint32_t>& tokens, uint32_t eos) {
  std::vector<std::pair<uint64_t, uint64_t>> documents;
  uint64_t start = 0;
  for (uint64_t i = 0; i < tokens.size(); i++)
    if (tokens[i] == eos) documents.emplace_back(start, i + 1), start = i + 1;
  return documents;
}

// Cut points that ignore the EOS positions: documents ending inside others, holding several EOS, skipping gaps,
// covering a tail after the last EOS; lengths repeat so numpy's tie order matters.
std::vector<std::pair<uint64_t, uint64_t>> random_documents(std::mt19937_64& gen, uint64_t total, uint64_t seq_len) {
  const std::vector<uint64_t> lengths = {1, 2, 5, seq_len / 2, seq_len - 1, seq_len, seq_len + 2, 3 * seq_len};
  std::vector<std::pair<uint64_t, uint64_t>> documents;
  for (uint64_t at = gen() % 3; at < total; at += gen() % 4 == 0 ? gen() % 4 : 0) {
    const uint64_t end = std::min(total, at + lengths[gen() % lengths.size()]);
    documents.emplace_back(at, end);
    at = end;
  }
  return documents;
}

PackingConfig packing(int64_t group_size, LongDocStrategy strategy, DocumentBoundaries boundaries,
                      std::string work_dir = "") {
  PackingConfig config{Packing::obfd, group_size, strategy, std::move(work_dir)};
  config.document_boundaries = boundaries;
  return config;
}

}  // namespace

TEST(PackedDatasetMetadata, SidecarsAtTheEosPositionsPackExactlyAsEos) {
  std::mt19937_64 gen(21);
  for (const LongDocStrategy strategy : {LongDocStrategy::truncate, LongDocStrategy::fragment}) {
    SCOPED_TRACE(long_doc_strategy_name(strategy));
    std::vector<std::string> paths;
    for (int f = 0; f < 9; f++) {
      const std::vector<uint32_t> tokens = random_tokens(gen, 32, kDolma2Eos);
      paths.push_back(write_tokens(fmt::format("same_{}_{}.npy", int(strategy), f), tokens));
      write_sidecar(paths.back(), eos_documents(tokens, kDolma2Eos));
    }
    const auto files = mix_from_paths(paths);
    const PackedDataset by_eos(files, 32, TokenDtype::u32, kDolma2VocabSize,
                               packing(4, strategy, DocumentBoundaries::eos));
    const PackedDataset by_metadata(files, 32, TokenDtype::u32, kDolma2VocabSize,
                                    packing(4, strategy, DocumentBoundaries::metadata));
    ASSERT_EQ(by_metadata.num_instances(), by_eos.num_instances());
    std::vector<int32_t> a(32), b(32);
    for (uint64_t i = 0; i < by_eos.num_instances(); i++) {
      by_eos.read_instance(i, a.data());
      by_metadata.read_instance(i, b.data());
      ASSERT_EQ(a, b) << "instance " << i;
      ASSERT_EQ(by_eos.document_lengths(i), by_metadata.document_lengths(i)) << "instance " << i;
    }
  }
}

TEST(PackedDatasetMetadata, SidecarsThatDisagreeWithEosMatchTheNumpyOracle) {
  const std::vector<PackingCase> cases = {
      {8, 1, std::nullopt, LongDocStrategy::truncate, TokenDtype::u32},
      {16, 3, 123, LongDocStrategy::fragment, TokenDtype::u16},
      {64, 8, 7, LongDocStrategy::truncate, TokenDtype::u32},
      {128, 2, std::nullopt, LongDocStrategy::fragment, TokenDtype::u32},
  };
  std::mt19937_64 gen(5);
  for (size_t c = 0; c < cases.size(); c++) {
    const PackingCase& k = cases[c];
    SCOPED_TRACE("case " + std::to_string(c));
    const uint32_t eos = k.eos();
    const uint64_t L = uint64_t(k.seq_len);
    std::vector<std::string> paths;
    for (size_t f = 0, n = 4 + gen() % 9; f < n; f++) {
      const std::vector<uint32_t> tokens = random_tokens(gen, L, eos);
      const std::string name = fmt::format("c{}_f{}.npy", c, f);
      paths.push_back(k.u16() ? write_tokens(name, std::vector<uint16_t>(tokens.begin(), tokens.end()))
                              : write_tokens(name, tokens));
      write_sidecar(paths.back(), random_documents(gen, tokens.size(), L));
    }
    std::vector<MixEntry> files = mix_from_paths(paths);
    if (k.permutation_seed) files = permute_mix(files, *k.permutation_seed);
    const PackedDataset set(files, k.seq_len, k.dtype, k.vocab(),
                            packing(k.group_size, k.strategy, DocumentBoundaries::metadata), eos, k.pad());
    expect_packing_oracle_matches(set, (metadata_dir() / ("oracle" + std::to_string(c))).string(),
                                  k.oracle_arguments(paths, "metadata"));
    bool masks_differ_from_documents = false;
    for (uint64_t i = 0; i < set.num_instances(); i++) {
      std::vector<int32_t> from_documents;  // what lengths taken from the packed documents would be
      for (const PackedDataset::Document& d : set.documents(i)) from_documents.push_back(int32_t(d.length));
      const int32_t filled = std::accumulate(from_documents.begin(), from_documents.end(), 0);
      if (filled < int32_t(L)) from_documents.push_back(int32_t(L) - filled);
      masks_differ_from_documents |= set.document_lengths(i) != from_documents;
    }
    // The cut points really disagree with the EOS scan somewhere (else this case tests nothing new).
    EXPECT_TRUE(masks_differ_from_documents);
  }
}

TEST(PackedDatasetMetadata, FingerprintAndCacheFollowTheSidecars) {
  std::mt19937_64 gen(9);
  std::vector<std::string> paths;
  std::vector<std::vector<uint32_t>> tokens;
  for (int f = 0; f < 4; f++) {
    tokens.push_back(random_tokens(gen, 16, kDolma2Eos));
    paths.push_back(write_tokens(fmt::format("cache_{}.npy", f), tokens.back()));
    write_sidecar(paths.back(), eos_documents(tokens.back(), kDolma2Eos));
  }
  const std::string work_dir = (metadata_dir() / "work").string();
  LoaderConfig config;
  config.files = mix_from_paths(paths);
  config.seq_len = 16;
  config.seed = 3;
  config.global_batch = 2;
  config.packing = packing(2, LongDocStrategy::truncate, DocumentBoundaries::eos, work_dir);
  const std::string eos_fingerprint = DataLoader(config).fingerprint();
  config.packing.document_boundaries = DocumentBoundaries::metadata;
  const DataLoader first(config);
  EXPECT_EQ(first.packed()->groups_from_cache(), 0u);  // a key of its own: the EOS packing's cache is not used
  EXPECT_NE(first.fingerprint(), eos_fingerprint);
  const DataLoader again(config);
  EXPECT_EQ(again.packed()->groups_from_cache(), 2u);
  EXPECT_EQ(again.fingerprint(), first.fingerprint());

  write_sidecar(paths[3], random_documents(gen, tokens[3].size(), 16));  // the second group's sidecar changes
  const DataLoader changed(config);
  EXPECT_EQ(changed.packed()->groups_from_cache(), 1u);
  EXPECT_NE(changed.fingerprint(), first.fingerprint());
  config.packing.work_dir.clear();
  const DataLoader uncached(config);
  ASSERT_EQ(uncached.packed()->num_instances(), changed.packed()->num_instances());
  for (uint64_t i = 0; i < uncached.packed()->num_instances(); i++) {
    const auto a = uncached.packed()->documents(i), b = changed.packed()->documents(i);
    ASSERT_EQ(a.size(), b.size()) << "instance " << i;
    for (size_t d = 0; d < a.size(); d++) EXPECT_EQ(a[d].start, b[d].start) << "instance " << i;
  }
  // The loader's document lengths are the EOS scan of the rows it serves.
  const Batch batch = changed.batch(1, 0);
  for (int64_t r = 0; r < batch.rows; r++)
    EXPECT_EQ(batch.doc_lens[size_t(r)], changed.packed()->document_lengths(batch.instances[size_t(r)]));
}

TEST(PackedDatasetMetadata, RefusesMetadataWithoutPackingAndBadSidecars) {
  const std::vector<uint32_t> tokens = {5, 6, kDolma2Eos, 7, kDolma2Eos};
  const std::string path = write_tokens("bad.npy", tokens);
  LoaderConfig config;
  config.files = mix_from_paths({path});
  config.seq_len = 4;
  config.global_batch = 1;
  config.packing.document_boundaries = DocumentBoundaries::metadata;
  EXPECT_NE(error_of([&] { DataLoader{config}; }).find("data.document_boundaries"), std::string::npos);

  auto open = [&](const std::string& token_path) {
    return error_of([&] {
      PackedDataset(mix_from_paths({token_path}), 4, TokenDtype::u32, kDolma2VocabSize,
                    packing(1, LongDocStrategy::truncate, DocumentBoundaries::metadata));
    });
  };
  std::filesystem::remove(document_metadata_path(path));
  EXPECT_NE(open(path).find("bad.csv.gz: missing"), std::string::npos) << open(path);
  write_sidecar(path, {{0, 3}, {3, 6}});
  EXPECT_NE(open(path).find("bad.csv.gz line 2: document end 6 is out of bounds of a token file of 5 tokens"),
            std::string::npos)
      << open(path);
  const std::string odd = write_tokens("tokens.bin", tokens);
  EXPECT_NE(open(odd).find("has no '.npy'"), std::string::npos) << open(odd);
}
