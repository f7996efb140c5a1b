// step_targets (train/step.h): the labels a training step trains on, for unpacked and packed batches (OLMo-core's
// get_labels, stage3.md §3.4), written out by hand.
#include <gtest/gtest.h>

#include <vector>

#include "replica/core/error.h"
#include "replica/data/tokenizer.h"
#include "replica/train/step.h"

namespace replica {
namespace {

constexpr int32_t kEos = int32_t(data::kDolma2Eos), kPad = int32_t(data::kDolma2Pad), kNone = kIgnoreLabel;

data::Batch batch(std::vector<int32_t> tokens, int64_t rows, std::vector<std::vector<int32_t>> doc_lens) {
  const int64_t T = int64_t(tokens.size()) / rows;
  return {.rows = rows, .seq_len = T, .tokens = std::move(tokens), .keep = std::vector<uint8_t>(size_t(rows), 1),
          .instances = {}, .doc_lens = std::move(doc_lens)};
}

TEST(StepTargets, UnpackedRowsAreTheIdsShiftedLeft) {
  EXPECT_EQ(step_targets(batch({5, 6, kEos, 7, 8, 9, 10, 11}, 2, {})),
            (std::vector<int32_t>{6, kEos, 7, kNone, 9, 10, 11, kNone}));
}

// The EOS ending a document predicts the next document's first token; nothing predicts padding.
TEST(StepTargets, PackedRowsTrainAcrossDocumentsButNeverOnPadding) {
  const data::Batch b = batch({5, 6, kEos, 7, kEos, kPad, kPad, kPad,  //
                               8, kEos, 9, 10, 11, 12, 13, kEos},
                              2, {{3, 2, 3}, {2, 6}});
  EXPECT_EQ(step_targets(b), (std::vector<int32_t>{6, kEos, 7, kEos, kNone, kNone, kNone, kNone,  //
                                                   kEos, 9, 10, 11, 12, 13, kEos, kNone}));
}

TEST(StepTargets, DocumentLengthsForTheWrongNumberOfRowsAreAnError) {
  EXPECT_THROW(step_targets(batch({5, 6, 7, 8}, 2, {{2}})), Error);
}

}  // namespace
}  // namespace replica
