// document_offsets and check_document_offsets (model/document_offsets.h): packed rows' lengths into the offsets attention
// takes, and the errors that name what was expected.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "replica/core/error.h"
#include "replica/model/document_offsets.h"

namespace replica::model {
namespace {

// The message of the replica::Error `f` raises contains `fragment`.
template <typename F>
void expect_offsets_error(F f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DocumentOffsets, AreTheDocumentEndsOverTheRowsInOrder) {
  const std::vector<std::vector<int32_t>> lens = {{3, 1, 4}, {8}, {1, 1, 1, 5}};
  EXPECT_EQ(document_offsets(lens, 8, 0), (std::vector<int32_t>{0, 3, 4, 8, 16, 17, 18, 19, 24}));
  EXPECT_NO_THROW(check_document_offsets(document_offsets(lens, 8, 0), 3, 8));
}

TEST(DocumentOffsets, AnUnpackedBatchHasNone) {
  EXPECT_TRUE(document_offsets({}, 8, 0).empty());
  EXPECT_NO_THROW(check_document_offsets({}, 2, 8));
}

TEST(DocumentOffsets, LengthsThatDoNotSumToTheSequenceLengthAreAnError) {
  const std::vector<std::vector<int32_t>> short_row = {{8}, {3, 4}}, long_row = {{9}}, empty_doc = {{4, 0, 4}};
  expect_offsets_error([&] { document_offsets(short_row, 8, 2); },
                       "packed batch row 3: document lengths sum to 7, expected the sequence length 8");
  expect_offsets_error([&] { document_offsets(long_row, 8, 0); }, "sum to 9, expected the sequence length 8");
  expect_offsets_error([&] { document_offsets(empty_doc, 8, 0); }, "document length 0, expected every length > 0");
}

TEST(DocumentOffsets, OffsetsTheKernelsCannotTakeAreAnError) {
  const std::vector<int32_t> wrong_total = {0, 4, 12}, crossing = {0, 6, 12, 16}, not_increasing = {0, 4, 4, 8, 16};
  expect_offsets_error([&] { check_document_offsets(wrong_total, 2, 8); }, "expected 0 to 16 (B = 2 rows of T = 8)");
  expect_offsets_error([&] { check_document_offsets(crossing, 2, 8); },
                       "the document ending at 12 crosses the row start 8");
  expect_offsets_error([&] { check_document_offsets(not_increasing, 2, 8); }, "must increase: offset 2 is 4 after 4");
}

}  // namespace
}  // namespace replica::model
