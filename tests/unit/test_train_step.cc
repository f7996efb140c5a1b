// step_targets (train/step.h): the labels a training step trains on, for unpacked and packed batches (OLMo-core's
// get_labels, stage3.md §3.4), written out by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "thread_communicator.h"
#include "replica/core/error.h"
#include "replica/data/tokenizer.h"
#include "replica/model/document_offsets.h"
#include "replica/model/params.h"
#include "replica/train/step.h"

namespace replica::train {
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

// OLMo-core's packed loss: each rank's sum over its own labels (padding has none), the ranks' means averaged. Two
// ranks of one row each, rank 0 padded (10 labels), rank 1 not (15 labels), on a model whose vocabulary holds the
// pad id; the expectation comes from the model run on each row alone.
TEST(TrainStep, PackedLossIsTheMeanOfTheRanksMeansOverTheirLabels) {
  const model::ModelConfig config = model::model_config_from_json(nlohmann::json{{"model_type", "olmo3"},
                                                                                 {"vocab_size", 100352},
                                                                                 {"hidden_size", 16},
                                                                                 {"intermediate_size", 32},
                                                                                 {"num_hidden_layers", 1},
                                                                                 {"num_attention_heads", 2},
                                                                                 {"head_dim", 8},
                                                                                 {"sliding_window", 4}},
                                                                  "packed test model");
  const int64_t T = 16;
  const std::vector<data::Batch> rows = {
      batch({5, 6, 7, 8, kEos, 9, 10, 11, 12, 13, kEos, kPad, kPad, kPad, kPad, kPad}, 1, {{5, 6, 5}}),
      batch({21, 22, kEos, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, kEos}, 1, {{3, 13}})};
  const model::ParamTable table(config);
  std::vector<float> params(table.total());
  model::init_params(config, table, 3, params.data());

  double expected = 0;  // the mean of the two rows' mean cross-entropies
  for (const data::Batch& row : rows) {
    model::Transformer model(config, Precision::fp32, model::Remat::none, cpu_backend());
    const std::vector<int32_t> targets = step_targets(row), offsets = model::document_offsets(row.doc_lens, T, 0);
    const LossSums sums =
        model.forward_loss(params.data(), model::MicroBatch{row.tokens.data(), targets.data(), 1, T, offsets}, 0.0f);
    expected += sums.ce / double(sums.n_labels) / 2;
  }
  EXPECT_EQ(step_targets(rows[0])[10], kNone);  // the EOS before the padding predicts nothing

  double got = 0;
  distributed::ThreadGroup(2).run([&](distributed::Communicator& comm) {
    StepConfig c;
    c.seq_len = T, c.global_batch = 2, c.micro_batch = 1;
    c.schedule = {.type = optim::ScheduleType::constant, .lr = 1e-3};
    c.skip_step.enabled = false;
    TrainStep step(config, c, comm, comm, cpu_backend());
    step.dp().load_weights(params.data());
    const StepResult result = step.run(rows[size_t(comm.rank())], 1);
    if (comm.rank() == 0) got = result.ce;
  });
  EXPECT_NEAR(got, expected, 1e-12 * expected);
}

}  // namespace
}  // namespace replica::train
