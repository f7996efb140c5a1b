// core/npy and data/token_file on crafted headers (reliability review D2, D5, D13): sizes are overflow-checked, the
// shape is parsed strictly, and every refusal names the file and what is wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "error_of.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/npy.h"
#include "replica/data/token_file.h"
#include "scratch_dir.h"

namespace replica {
namespace {

// A version-1.0 .npy whose header states `shape` verbatim, followed by `data_bytes` zero bytes.
std::string write_npy_with_shape(const std::string& name, const std::string& shape, size_t data_bytes,
                                 const std::string& descr = "<u4") {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size() & 0xff) + char(dict.size() >> 8) + dict;
  bytes.append(data_bytes, '\0');
  const std::string path = (testing::scratch_dir("core_npy") / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string header_error(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return error_of([&] { parse_npy_header(bytes.data(), bytes.size(), path); });
}

TEST(NpyHeader, ACountThatWrapsPast2To64IsRefused) {
  // The review's 132-byte file: 2^62 + 1 uint32 tokens, whose byte count wraps to 4, and 4 bytes of data.
  const std::string path = write_npy_with_shape("wrap.npy", "(4611686018427387905,)", 4);
  EXPECT_EQ(std::filesystem::file_size(path), 132u);
  const std::string message = header_error(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("truncated .npy data"), std::string::npos) << message;
  EXPECT_THROW(data::TokenFile(path, data::TokenDtype::u32), Error);
  EXPECT_THROW(read_npy_ids(path, nullptr), Error);
  // Dimensions whose product overflows are refused the same way.
  EXPECT_NE(header_error(write_npy_with_shape("product.npy", "(4294967296, 4294967296)", 4)).find("truncated"),
            std::string::npos);
}

TEST(NpyHeader, ShapesThatAreNotTuplesOfNonNegativeIntegersAreRefused) {
  for (const char* shape : {"(abc,)", "(None,)", "(-1,)", "(1, -2)", "(,)", "(3,,)", "(99999999999999999999,)"}) {
    const std::string message = header_error(write_npy_with_shape("shape.npy", shape, 64));
    EXPECT_NE(message.find("shape"), std::string::npos) << shape << ": " << message;
  }
  // An unclosed tuple runs into the rest of the header.
  EXPECT_NE(header_error(write_npy_with_shape("unclosed.npy", "(1000", 64)).find("not terminated"), std::string::npos);
}

TEST(NpyHeader, ZeroDimensionsAndScalarsHaveTheirNumPyCounts) {
  const std::string empty = write_npy_with_shape("empty.npy", "(0, 4611686018427387905)", 0);
  const std::vector<char> bytes = read_file(empty);
  EXPECT_EQ(parse_npy_header(bytes.data(), bytes.size(), empty).count(), 0u);
  const std::string scalar = write_npy_with_shape("scalar.npy", "()", 4);
  const std::vector<char> one = read_file(scalar);
  const NpyHeader header = parse_npy_header(one.data(), one.size(), scalar);
  EXPECT_TRUE(header.shape.empty());
  EXPECT_EQ(header.count(), 1u);
}

TEST(NpyHeader, AFileOfOnlyTheMagicIsTruncatedNotUnknown) {
  const std::string path = (testing::scratch_dir("core_npy") / "magic.npy").string();
  std::ofstream(path, std::ios::binary) << "\x93NUMPY";
  const std::string message = header_error(path);
  EXPECT_NE(message.find("truncated .npy file (6 bytes"), std::string::npos) << message;
}

TEST(NpyHeader, UnknownFormatVersionsAreNamed) {
  std::string path = write_npy_with_shape("v9.npy", "(1,)", 4);
  std::vector<char> bytes = read_file(path);
  bytes[6] = 9;
  try {
    parse_npy_header(bytes.data(), bytes.size(), path);
    FAIL() << "expected replica::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("format version 9.0"), std::string::npos) << e.what();
  }
}

TEST(TokenFile, ADirectoryIsNamedAsOne) {
  const std::string dir = testing::scratch_dir("core_npy").string();
  try {
    data::TokenFile file(dir, data::TokenDtype::u32);
    FAIL() << "expected replica::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory (expected a file)");
  }
  EXPECT_THROW(read_file(dir), Error);
}

TEST(CoreNpy, AHeaderPaddedToAMinimumSizeStillParsesToItsShape) {
  EXPECT_EQ(npy_header(NpyType::u32, {0}, 128).size(), 128u);
  EXPECT_EQ(npy_header(NpyType::u32, {123456789012}, 128).size(), 128u);  // a rewrite with the final count fits
  EXPECT_EQ(npy_header(NpyType::u32, {5}, 200).size(), 256u);              // still a multiple of 64
  const std::vector<uint32_t> ids = {7, 8, 9};
  const std::string path = (testing::scratch_dir("core_npy") / "three.npy").string();
  write_npy(path, NpyType::u32, {3}, ids.data());
  const std::string written = read_text_file(path), header = npy_header(NpyType::u32, {3});
  EXPECT_EQ(written.substr(0, header.size()), header);  // write_npy writes the same header
  const std::string padded = npy_header(NpyType::u32, {3}, 256) + written.substr(header.size());
  const NpyHeader parsed = parse_npy_header(padded.data(), padded.size(), "padded.npy");
  EXPECT_EQ(parsed.shape, std::vector<int64_t>{3});
  EXPECT_EQ(parsed.data_offset, 256u);
}

TEST(CoreAtomicFile, OverwriteReplacesBytesAndLaterWritesAppend) {
  const std::string path = (testing::scratch_dir("core_npy") / "overwrite.bin").string();
  AtomicFile out(path);
  out.write("aaaa", 4);
  out.overwrite(1, "bb", 2);
  out.write("cc", 2);
  out.commit();
  EXPECT_EQ(read_text_file(path), "abbacc");
}

// Review case 44: a rename that fails (the path is a directory) left PATH.tmp behind, as commit() had closed it.
TEST(CoreAtomicFile, ARenameThatFailsTakesItsTemporaryWithIt) {
  const std::filesystem::path dir = testing::scratch_dir("core_atomic_rename") / "report.html";
  std::filesystem::create_directories(dir / "inside");
  AtomicFile out(dir.string());
  out.write("page", 4);
  EXPECT_THROW(out.commit(), Error);
  EXPECT_FALSE(std::filesystem::exists(dir.string() + ".tmp"));
  EXPECT_TRUE(std::filesystem::is_directory(dir / "inside")) << "the directory in the way is left as it was";
}

}  // namespace
}  // namespace replica
