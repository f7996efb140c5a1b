// metrics.jsonl as the report reads it, in the writer's schema (train/metrics_sinks.cc): training lines, evaluation
// lines with per-file held-out loss, task scores and the memorisation alarm; the later line of a step wins; a bad
// line is named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "replica/core/error.h"
#include "replica/report/metrics_jsonl.h"

namespace replica::report {
namespace {

std::string write_metrics_jsonl(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_metrics.jsonl");
  std::ofstream(path) << text;
  return path.string();
}

TEST(ReportMetricsJsonl, ReadsTrainingAndEvaluationLines) {
  const std::string path = write_metrics_jsonl(
      R"({"eval":{"files":{"a":11.5,"b":11.25},"heldout_loss":11.375,"heldout_tokens":10},"step":0})"
      "\n"
      R"({"batch":0,"ce":3.5,"comm_s":0.0,"epoch":1,"grad_norm":1.5,"loss":3.75,"lr":0.003,"mfu":null,)"
      R"("skipped":false,"step":1,"tokens":4096,"tokens_per_s":265.1,"z_loss":0.25})"
      "\n"
      R"({"batch":1,"ce":3.0,"grad_norm":9.0,"loss":3.25,"lr":0.002,"mfu":0.5,"skipped":true,"step":2,)"
      R"("tokens_per_s":250.0,"z_loss":0.25})"
      "\n"
      R"({"eval":{"files":{"a":10.5},"heldout_loss":10.5,"heldout_tokens":10,"memorisation_alarm":{"from_step":0,)"
      R"("heldout_loss":[11.375,10.5],"train_loss":[3.75,3.25]},"suite":{"tasks":{"format":"lm_eval","arc_easy":)"
      R"({"acc":0.5,"acc_stderr":0.1,"acc_norm":0.75,"acc_norm_stderr":0.1,"docs":4,"forwards":16,"path":"x",)"
      R"("requests":16}}}},"step":2})"
      "\n"
      R"({"batch":1,"ce":2.5,"grad_norm":1.0,"loss":2.75,"lr":0.002,"mfu":0.5,"skipped":false,"step":2,)"
      R"("tokens_per_s":250.0,"z_loss":0.25})"
      "\n");
  RunHistory run;
  read_metrics_jsonl(path, run);
  ASSERT_EQ(run.train.at("loss").size(), 2u);
  EXPECT_EQ(run.train.at("loss")[1].value, 2.75);  // the later line of step 2
  EXPECT_EQ(run.train.at("skipped")[1].value, 0.0);
  EXPECT_EQ(run.train.at("tokens_per_s")[0].value, 265.1);
  ASSERT_EQ(run.train.at("mfu").size(), 1u);  // MFU null at step 1: not measured (a step beat the peak)
  EXPECT_EQ(run.train.at("mfu")[0].step, 2);
  EXPECT_EQ(run.heldout.at("all").size(), 2u);
  EXPECT_EQ(run.heldout.at("b").size(), 1u);
  EXPECT_EQ(run.heldout.at("a")[1].value, 10.5);
  EXPECT_EQ(run.tasks.size(), 2u);  // acc and acc_norm; not the errors, counts or path
  EXPECT_EQ(run.tasks.at("arc_easy acc_norm")[0].value, 0.75);
  ASSERT_EQ(run.alarms.size(), 1u);
  EXPECT_EQ(run.alarms[0].step, 2);
  EXPECT_EQ(run.alarms[0].from_step, 0);
  std::filesystem::remove(path);
}

TEST(ReportMetricsJsonl, BadLineIsNamed) {
  const std::string path = write_metrics_jsonl("{\"step\":1,\"loss\":2.0}\n{\"loss\":2.0}\nnot json\n");
  RunHistory run;
  try {
    read_metrics_jsonl(path, run);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: expected a JSON object"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace replica::report
