// Token files and the FSL dataset: per-file chunking, global ids by cumulative offset, mix files, .npy and
// headerless uint16/uint32, clear errors for bad files; the repeated n-gram filter against a numpy oracle.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>

#include "error_of.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/npy.h"
#include "replica/data/dataset.h"
#include "replica/data/instance_filter.h"
#include "replica/data/tokenizer.h"
#include "scratch_dir.h"

using namespace replica;
using namespace replica::data;

namespace {

std::string dataset_dir() { return replica::testing::scratch_dir("data_dataset").string() + "/"; }

template <typename T>
std::string write_token_file(const std::string& name, const std::vector<T>& values) {
  std::string path = dataset_dir() + name;
  AtomicFile file(path);
  file.write(values.data(), values.size() * sizeof(T));
  file.commit();
  return path;
}

std::vector<uint32_t> iota(uint32_t n, uint32_t start) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace

TEST(DataDataset, ChunksEachFileAndDropsTails) {
  std::string a = write_token_file("a.npy", iota(10, 0)), b = write_token_file("b.npy", iota(7, 100)),
              c = write_token_file("c.npy", iota(2, 500));
  FslDataset ds(mix_from_paths({a, b, c}), 3, TokenDtype::u32, 1000);
  EXPECT_EQ(ds.num_instances(), 3u + 2u + 0u);  // 10 // 3, 7 // 3, 2 // 3: instances never cross files
  EXPECT_EQ(ds.first_instance(1), 3u);
  EXPECT_EQ(ds.locate(4).file, 1u);
  EXPECT_EQ(ds.locate(4).local, 1u);
  std::vector<int32_t> out(3);
  ds.read_instance(2, out.data());
  EXPECT_EQ(out, (std::vector<int32_t>{6, 7, 8}));
  ds.read_instance(3, out.data());
  EXPECT_EQ(out, (std::vector<int32_t>{100, 101, 102}));
  ds.read_instance(4, out.data());
  EXPECT_EQ(out, (std::vector<int32_t>{103, 104, 105}));
  EXPECT_THROW(ds.read_instance(5, out.data()), Error);
  EXPECT_EQ(ds.label(0), "a");
}

TEST(DataDataset, NpyHeadersAndUint16) {
  std::vector<uint32_t> ids = iota(40, 65000);
  std::string raw32 = write_token_file("raw32.npy", ids);
  std::string npy32 = dataset_dir() + "real32.npy";
  write_npy(npy32, NpyType::u32, {40}, ids.data());
  std::vector<uint16_t> small(40);
  for (int i = 0; i < 40; i++) small[i] = uint16_t(ids[i] - 65000 + 7);
  std::string raw16 = write_token_file("raw16.npy", small);
  std::string npy16 = dataset_dir() + "real16.npy";
  write_npy(npy16, NpyType::u16, {40}, small.data());

  TokenFile f32(raw32, TokenDtype::u32), h32(npy32, TokenDtype::u32), f16(raw16, TokenDtype::u16);
  TokenFile h16(npy16, TokenDtype::u32);  // the header's dtype wins over the headerless default
  EXPECT_FALSE(f32.has_npy_header());
  EXPECT_TRUE(h32.has_npy_header());
  EXPECT_EQ(h16.dtype(), TokenDtype::u16);
  for (uint64_t i = 0; i < 40; i++) {
    EXPECT_EQ(f32.at(i), ids[i]);
    EXPECT_EQ(h32.at(i), ids[i]);
    EXPECT_EQ(f16.at(i), small[i]);
    EXPECT_EQ(h16.at(i), small[i]);
  }
  EXPECT_EQ(f32.content_hash(), h32.content_hash());  // the hash covers tokens, not the header
  FslDataset ds({{"x", raw16}, {"y", npy16}}, 8, TokenDtype::u16, 100);
  EXPECT_EQ(ds.num_instances(), 10u);
  std::vector<int32_t> out(8);
  ds.read_instance(6, out.data());
  EXPECT_EQ(out[0], 7 + 8);
}

// Review case 53: uint32 ids read as uint16 decode as every other id 0 and pass every id check; the file says so.
TEST(DataDataset, Uint32IdsReadAsUint16AreNamed) {
  std::vector<uint32_t> ids = iota(9000, 5);  // below 65,536 (their high uint16 halves 0), and dolma2's EOS (1)
  for (size_t i = 0; i < ids.size(); i += 37) ids[i] = kDolma2Eos;
  std::string raw32 = write_token_file("ids32.npy", ids);
  const std::string hint = TokenFile(raw32, TokenDtype::u16).dtype_hint();
  EXPECT_NE(hint.find(raw32), std::string::npos) << hint;
  EXPECT_NE(hint.find("data.dtype=uint32"), std::string::npos) << hint;
  EXPECT_EQ(TokenFile(raw32, TokenDtype::u32).dtype_hint(), "");
  std::vector<uint16_t> text(9000);
  for (size_t i = 0; i < text.size(); i++) text[i] = uint16_t(i % 7 == 0 ? 0 : 1 + i % 5000);  // zeros are ids too
  EXPECT_EQ(TokenFile(write_token_file("ids16.npy", text), TokenDtype::u16).dtype_hint(), "");
  std::string npy32 = dataset_dir() + "ids32_header.npy";
  write_npy(npy32, NpyType::u32, {9000}, ids.data());
  EXPECT_EQ(TokenFile(npy32, TokenDtype::u16).dtype_hint(), "");  // a header settles the dtype
}

TEST(DataDataset, MixFilesWithLabelsAndRelativePaths) {
  write_token_file("m1.npy", iota(8, 0));
  write_token_file("m2.npy", iota(8, 50));
  std::string mix = dataset_dir() + "train.mix";
  write_text_file_atomic(mix, "# comment\nweb,m1.npy\n\n" + dataset_dir() + "m2.npy\r\n");
  auto entries = read_mix_file(mix);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].label, "web");
  EXPECT_EQ(entries[0].path, dataset_dir() + "m1.npy");
  EXPECT_EQ(entries[1].label, "m2");
  FslDataset ds(entries, 4, TokenDtype::u32, 100);
  EXPECT_EQ(ds.num_instances(), 4u);
  write_text_file_atomic(dataset_dir() + "empty.mix", "# nothing\n");
  EXPECT_NE(error_of([&] { read_mix_file(dataset_dir() + "empty.mix"); }).find("lists no token files"),
            std::string::npos);
}

TEST(DataDataset, BadFilesGetClearErrors) {
  std::string empty = write_token_file("empty.npy", std::vector<uint32_t>{});
  EXPECT_NE(error_of([&] { TokenFile(empty, TokenDtype::u32); }).find("empty token file"), std::string::npos);

  std::string truncated = write_token_file("truncated.npy", std::vector<uint8_t>{1, 0, 0, 0, 2});
  std::string message = error_of([&] { TokenFile(truncated, TokenDtype::u32); });
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated.npy"), std::string::npos) << message;

  std::vector<uint32_t> ids = iota(16, 0);
  std::string npy = dataset_dir() + "cut.npy";
  write_npy(npy, NpyType::u32, {16}, ids.data());
  std::vector<char> bytes = read_file(npy);
  bytes.resize(bytes.size() - 6);
  std::string cut = write_token_file("cut_data.npy", bytes);
  EXPECT_NE(error_of([&] { TokenFile(cut, TokenDtype::u32); }).find("truncated"), std::string::npos);

  std::string floats = dataset_dir() + "floats.npy";
  std::vector<float> f(4, 1.0f);
  write_npy(floats, NpyType::f32, {4}, f.data());
  EXPECT_NE(error_of([&] { TokenFile(floats, TokenDtype::u32); }).find("not a token dtype"), std::string::npos);

  std::string big = write_token_file("big_id.npy", std::vector<uint32_t>{1, 2, 3, 100278, 5, 6});
  FslDataset ds(mix_from_paths({big}), 3, TokenDtype::u32, 100278);
  std::vector<int32_t> out(3);
  ds.read_instance(0, out.data());
  message = error_of([&] { ds.read_instance(1, out.data()); });
  EXPECT_NE(message.find("token 3 has id 100278 >= vocab size 100278"), std::string::npos) << message;
  EXPECT_NE(message.find("big_id.npy"), std::string::npos) << message;

  EXPECT_NE(error_of([&] { TokenFile(dataset_dir() + "missing.npy", TokenDtype::u32); }).find("cannot open"),
            std::string::npos);
  EXPECT_THROW(parse_token_dtype("int8"), Error);
}

TEST(DataFilter, KnownCases) {
  InstanceFilterConfig on{.enabled = true};
  std::vector<int32_t> row(200);
  std::iota(row.begin(), row.end(), 1000);
  EXPECT_TRUE(instance_passes(row.data(), row.size(), on));
  for (int i = 10; i < 10 + 32; i++) row[size_t(i)] = 7;  // one token 32 times: period 1, 32 repeats
  EXPECT_FALSE(instance_passes(row.data(), row.size(), on));
  EXPECT_TRUE(instance_passes(row.data(), row.size(), InstanceFilterConfig{}));  // off by default
  row[41] = 8;                                                                   // now 31 repeats
  EXPECT_TRUE(instance_passes(row.data(), row.size(), on));
  std::iota(row.begin(), row.end(), 1000);
  for (int i = 0; i < 13 * 32; i++)
    if (50 + i < 200) row[size_t(50 + i)] = 3000 + i % 13;  // period 13 but only 150 tokens: 11 repeats
  EXPECT_TRUE(instance_passes(row.data(), row.size(), on));
}

TEST(DataFilter, MatchesOlmoCoreAlgorithmViaNumpy) {
  // Rows with injected periodic runs near the threshold (periods 1..15, 28..36 repeats, partial periods,
  // runs touching either end), decided by replica and by the numpy re-implementation of OLMo-core's scan.
  std::mt19937 rng(11);
  const int rows = 300;
  std::vector<int64_t> data;
  std::vector<int64_t> lengths = {64, 97, 150, 256, 400, 513};
  const int64_t width = 513;
  for (int r = 0; r < rows; r++) {
    int64_t n = lengths[size_t(r) % lengths.size()];
    std::vector<int64_t> row(size_t(width), 0);
    for (int64_t i = 0; i < width; i++) row[size_t(i)] = int64_t(rng() % 50000);
    if (r % 6 != 5) {
      int64_t period = 1 + int64_t(rng() % 15), times = 28 + int64_t(rng() % 9), extra = int64_t(rng() % period);
      int64_t len = std::min<int64_t>(period * times + extra, n);
      int64_t start = r % 3 == 0 ? 0 : (r % 3 == 1 ? n - len : int64_t(rng() % uint32_t(n - len + 1)));
      for (int64_t i = 0; i < len; i++) row[size_t(start + i)] = 60000 + i % period;
    }
    row.resize(size_t(n));
    row.resize(size_t(width), -7);  // padding past n is not part of the row (n is per-row below)
    data.insert(data.end(), row.begin(), row.end());
  }
  // The oracle takes equal-length rows, so write one file per distinct length.
  std::vector<uint8_t> expected(rows), got(rows);
  for (int64_t n : lengths) {
    std::vector<int64_t> block;
    std::vector<int> which;
    for (int r = 0; r < rows; r++)
      if (lengths[size_t(r) % lengths.size()] == n) {
        block.insert(block.end(), data.begin() + r * width, data.begin() + r * width + n);
        which.push_back(r);
      }
    std::string in = dataset_dir() + fmt::format("rows_{}.npy", n), out = dataset_dir() + fmt::format("keep_{}.npy", n);
    write_npy(in, NpyType::i64, {int64_t(which.size()), n}, block.data());
    std::string command = fmt::format("/usr/bin/python3 {}/tools/data/numpy_oracle.py ngram {} {} 13 1 32",
                                      REPLICA_SOURCE_DIR, in, out);
    ASSERT_EQ(std::system(command.c_str()), 0);
    NpyArray keep = read_npy(out);
    for (size_t k = 0; k < which.size(); k++) {
      expected[size_t(which[k])] = keep.as<uint8_t>()[k];
      std::vector<int32_t> row(block.begin() + int64_t(k) * n, block.begin() + int64_t(k + 1) * n);
      got[size_t(which[k])] = instance_passes(row.data(), row.size(), InstanceFilterConfig{.enabled = true});
    }
  }
  int masked = 0;
  for (int r = 0; r < rows; r++) {
    EXPECT_EQ(got[size_t(r)], expected[size_t(r)]) << "row " << r;
    masked += !expected[size_t(r)];
  }
  EXPECT_GT(masked, 50);   // the cases straddle the threshold: both decisions occur
  EXPECT_LT(masked, 250);
}
