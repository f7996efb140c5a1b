// A W&B CSV export of an OLMo-core run read as a report run: OLMo-core's metric names mapped onto metrics.jsonl's,
// the panel export's run-name prefix and band columns, empty cells, and errors naming the file, line and column.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/report/wandb_csv.h"

namespace replica::report {
namespace {

std::string write_csv(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(ReportWandbCsv, MapsOlmoCoreMetricNames) {
  EXPECT_EQ(wandb_metric_column("train/CE loss").name, "ce");
  EXPECT_EQ(wandb_metric_column("optim/LR (group 0)").name, "lr");
  EXPECT_EQ(wandb_metric_column("optim/total grad norm").name, "grad_norm");
  EXPECT_EQ(wandb_metric_column("throughput/device/MFU").scale, 0.01);
  const MetricColumn lm = wandb_metric_column("eval/lm/c4_en-validation/CE loss");
  EXPECT_EQ(lm.kind, "heldout");
  EXPECT_EQ(lm.name, "c4_en-validation");
  EXPECT_EQ(wandb_metric_column("eval/downstream/arc_easy (length-normalized accuracy)").name,
            "arc_easy length-normalized accuracy");
  EXPECT_EQ(wandb_metric_column("olmo3-7b - train/Z loss").name, "z_loss");  // a panel export's column
  EXPECT_EQ(wandb_metric_column("olmo3-7b - train/Z loss__MIN").kind, "");
  EXPECT_EQ(wandb_metric_column("_runtime").kind, "");
}

TEST(ReportWandbCsv, ReadsAHistoryExport) {
  const std::string path = write_csv("history.csv",
                                     "_step,train/CE loss,train/Z loss,optim/LR (group 0),\"throughput/device/MFU\","
                                     "eval/lm/c4/CE loss,_runtime\n"
                                     "1,10.5,0.25,1e-4,40,,3.1\n"
                                     "2,9.5,0.25,2e-4,50,,6.2\n"
                                     "3,9.0,,3e-4,,8.75,9.3\n");
  RunHistory run;
  read_wandb_csv(path, run);
  ASSERT_EQ(run.train.at("ce").size(), 3u);
  EXPECT_EQ(run.train.at("ce")[2].value, 9.0);
  EXPECT_EQ(run.train.at("z_loss").size(), 2u);  // an empty cell is no point
  ASSERT_EQ(run.train.at("loss").size(), 2u);    // ce + z_loss where both are logged
  EXPECT_EQ(run.train.at("loss")[1].value, 9.75);
  EXPECT_DOUBLE_EQ(run.train.at("mfu")[0].value, 0.4);
  EXPECT_EQ(run.train.at("lr")[1].value, 2e-4);
  ASSERT_EQ(run.heldout.at("c4").size(), 1u);
  EXPECT_EQ(run.heldout.at("c4")[0].step, 3);
  std::filesystem::remove(path);
}

void expect_wandb_csv_error(const std::string& text, const std::string& message) {
  const std::string path = write_csv("bad.csv", text);
  RunHistory run;
  try {
    read_wandb_csv(path, run);
    ADD_FAILURE() << "no error for: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + message), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(ReportWandbCsv, BadInputNamesTheFileLineAndColumn) {
  expect_wandb_csv_error("train/CE loss\n1.0\n", ":1: no step column");
  expect_wandb_csv_error("Step,x\n1,2\n", ":1: no OLMo-core metric");
  expect_wandb_csv_error("Step,train/CE loss\n1,2.0\n2,abc\n", ":3:2: column 'train/CE loss': 'abc' is not a number");
  expect_wandb_csv_error("Step,train/CE loss\n1,2.0,3\n", ":2: 3 fields, expected 2");
  expect_wandb_csv_error("Step,train/CE loss\n1.5,2.0\n", ":2: column Step: '1.5' is not a step number");
  expect_wandb_csv_error("Step,train/CE loss\ninf,2.0\n", ":2: column Step: 'inf' is not a step number");
  expect_wandb_csv_error("Step,train/CE loss\n1e30,2.0\n", ":2: column Step: '1e30' is not a step number");
}

// Review 2026-12-03, W5 (cases 39-40): nan and inf cells passed, and two runs' columns became one stitched curve.
TEST(ReportWandbCsv, RefusesNonFiniteCellsAndTwoColumnsOfOneMetric) {
  expect_wandb_csv_error("_step,train/CE loss,train/Z loss\n1,nan,0.001\n",
                         ":2:2: column 'train/CE loss': 'nan' is not a finite number");
  expect_wandb_csv_error("_step,train/CE loss\n1,10.5\n2,-inf\n",
                         ":3:2: column 'train/CE loss': '-inf' is not a finite number");
  expect_wandb_csv_error("Step,runA - train/CE loss,runB - train/CE loss\n1,11.0,\n2,10.0,4.0\n",
                         ":1: columns 'runA - train/CE loss' and 'runB - train/CE loss' both hold the metric ce");
  expect_wandb_csv_error("Step,train/CE loss,x,train/CE loss\n1,1,2,3\n",
                         ":1: columns 'train/CE loss' and 'train/CE loss' both hold the metric ce");
}

TEST(ReportWandbCsv, ReadsAHeaderAfterAByteOrderMark) {
  const std::string path = (std::filesystem::temp_directory_path() / "replica_wandb_bom.csv").string();
  write_text_file_atomic(path, "\xEF\xBB\xBF_step,train/CE loss\n1,2.5\n2,2.25\n");
  RunHistory run;
  read_wandb_csv(path, run);
  ASSERT_EQ(run.train.at("ce").size(), 2u);
  EXPECT_EQ(run.train.at("ce")[1].value, 2.25);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace replica::report
