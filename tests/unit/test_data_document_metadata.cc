// Dolma metadata sidecars (data/document_metadata.h): OLMo-core's sidecar name, gzip as Python's gzip module reads
// it, the `start,end[,...]` lines, and every refusal, each naming the file and line.
#include <gtest/gtest.h>
#include <zlib.h>

#include "error_of.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/data/document_metadata.h"
#include "scratch_dir.h"

using namespace replica;
using namespace replica::data;

namespace {

// One gzip member holding `text`, written with zlib (as Python's gzip.compress would).
std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, uLong(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = uInt(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string inflated(const std::string& bytes) { return gunzip(std::span(bytes.data(), bytes.size()), "m.csv.gz"); }

std::string parse_error(const std::string& text, uint64_t total_tokens = 100) {
  return error_of([&] { parse_document_metadata(text, total_tokens, "m.csv.gz"); });
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(DocumentMetadataPath, ReplacesEveryNpyOfTheBaseNameAsPythonsStrReplace) {
  EXPECT_EQ(document_metadata_path("/data/longmino/part-012-00000.npy"), "/data/longmino/part-012-00000.csv.gz");
  EXPECT_EQ(document_metadata_path("a.npy.npy"), "a.csv.gz.csv.gz");
  EXPECT_EQ(document_metadata_path("x.npy/b.npy_1.npy"), "x.npy/b.csv.gz_1.csv.gz");  // the directory is kept
}

TEST(DocumentMetadataPath, RefusesANameWithoutNpyThatOlmoCoreWouldMapToItself) {
  const std::string message = error_of([] { document_metadata_path("/data/tokens.bin"); });
  EXPECT_TRUE(has(message, "/data/tokens.bin") && has(message, "'.npy'")) << message;
}

TEST(Gunzip, InflatesOneMemberSeveralAndZeroPadding) {
  EXPECT_EQ(inflated(gzip("0,5\n5,9\n")), "0,5\n5,9\n");
  EXPECT_EQ(inflated(gzip("0,5\n") + gzip("5,9\n")), "0,5\n5,9\n");
  EXPECT_EQ(inflated(gzip("0,5\n") + std::string(7, '\0')), "0,5\n");
  EXPECT_EQ(inflated(gzip("")), "");
  std::string big;
  for (int i = 0; i < 100000; i++) big += std::to_string(i) + "," + std::to_string(i + 1) + ",doc\n";
  EXPECT_EQ(inflated(gzip(big)), big);  // more than one output chunk
}

TEST(Gunzip, RefusesWhatIsNotGzipTruncatedOrCorrupt) {
  EXPECT_TRUE(has(error_of([] { inflated("0,5\n"); }), "m.csv.gz: not a gzip file"));
  EXPECT_TRUE(has(error_of([] { inflated(""); }), "not a gzip file"));
  const std::string member = gzip("0,5\n5,9\n");
  EXPECT_TRUE(has(error_of([&] { inflated(member.substr(0, member.size() - 3)); }), "truncated"));
  EXPECT_TRUE(has(error_of([&] { inflated(member.substr(0, 12)); }), "truncated"));
  std::string bad_crc = member;
  bad_crc[bad_crc.size() - 6] ^= 1;  // the CRC-32 of the trailer
  EXPECT_TRUE(has(error_of([&] { inflated(bad_crc); }), "corrupt gzip data")) << error_of([&] { inflated(bad_crc); });
  EXPECT_TRUE(has(error_of([&] { inflated(member + "junk"); }), "not another gzip member"));
}

TEST(DocumentMetadataParse, ReadsStartEndAndIgnoresFurtherColumns) {
  const std::vector<DocumentSpan> docs =
      parse_document_metadata("0,5,id-1,s3://src/a.json.gz,1\r\n5,9\n12,20,x\r30,31", 31, "m.csv.gz");
  ASSERT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[0].start, 0u);
  EXPECT_EQ(docs[0].end, 5u);
  EXPECT_EQ(docs[1].start, 5u);
  EXPECT_EQ(docs[2].start, 12u);  // a gap between documents: those tokens are in no document
  EXPECT_EQ(docs[2].end, 20u);
  EXPECT_EQ(docs[3].start, 30u);
  EXPECT_EQ(docs[3].end, 31u);
  EXPECT_TRUE(parse_document_metadata("", 10, "m.csv.gz").empty());
}

TEST(DocumentMetadataParse, RefusesLinesThatAreNotStartEnd) {
  EXPECT_TRUE(has(parse_error("0,5\n17\n"), "m.csv.gz line 2: expected 'start,end'"));
  EXPECT_TRUE(has(parse_error("0,5\n\n5,9\n"), "m.csv.gz line 2: expected 'start,end'"));  // int('\n') fails too
  EXPECT_TRUE(has(parse_error("0,x5\n"), "line 1: expected two unsigned integers"));
  EXPECT_TRUE(has(parse_error("-1,5\n"), "line 1: expected two unsigned integers"));
  EXPECT_TRUE(has(parse_error(" 0,5\n"), "line 1: expected two unsigned integers"));
  EXPECT_TRUE(has(parse_error("0,\n"), "line 1: expected two unsigned integers"));
  EXPECT_TRUE(has(parse_error("0,18446744073709551616\n"), "line 1: expected two unsigned integers"));
}

TEST(DocumentMetadataParse, RefusesDocumentsOutOfBoundsAsOlmoCore) {
  EXPECT_TRUE(has(parse_error("0,5\n10,12\n", 10), "line 2: document start 10 is out of bounds of a token file of 10"));
  EXPECT_TRUE(has(parse_error("0,11\n", 10), "line 1: document end 11 is out of bounds"));
  EXPECT_EQ(parse_error("0,10\n", 10), "");
}

TEST(DocumentMetadataParse, RefusesEmptyReversedOutOfOrderAndOverlappingDocuments) {
  EXPECT_TRUE(has(parse_error("0,5\n5,5\n"), "line 2: document [5, 5) is empty or reversed"));
  EXPECT_TRUE(has(parse_error("7,3\n"), "line 1: document [7, 3) is empty or reversed"));
  EXPECT_TRUE(has(parse_error("0,5\n4,8\n"), "line 2: document [4, 8) starts before the previous document's end 5"));
  EXPECT_TRUE(has(parse_error("5,9\n0,5\n"), "line 2: document [0, 5) starts before the previous document's end 9"));
}

TEST(DocumentMetadata, NamesTheMissingSidecarAndTheTokenFileItBelongsTo) {
  const std::string token = (replica::testing::scratch_dir("document_metadata") / "lonely.npy").string();
  const std::string message = error_of([&] { DocumentMetadata{token}; });
  EXPECT_TRUE(has(message, "lonely.csv.gz: missing") && has(message, token) &&
              has(message, "data.document_boundaries: eos"))
      << message;
}

TEST(DocumentMetadata, HashesTheSidecarAndParsesItOnDemand) {
  const auto dir = replica::testing::scratch_dir("document_metadata");
  const std::string token = (dir / "part.npy").string(), sidecar = (dir / "part.csv.gz").string();
  auto write_sidecar = [&](const std::string& text) {
    const std::string bytes = gzip(text);
    AtomicFile file(sidecar);
    file.write(bytes.data(), bytes.size());
    file.commit();
  };
  write_sidecar("0,4\n4,9\n");
  const DocumentMetadata first(token);
  EXPECT_EQ(first.path(), sidecar);
  ASSERT_EQ(first.documents(9).size(), 2u);
  EXPECT_TRUE(has(error_of([&] { first.documents(8); }), sidecar + " line 2: document end 9 is out of bounds"));
  write_sidecar("0,4\n5,9\n");
  EXPECT_NE(DocumentMetadata(token).content_hash(), first.content_hash());
}
