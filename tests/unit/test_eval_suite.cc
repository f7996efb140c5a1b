// eval/suite: a suite YAML is read section by section by its surfaces, and unknown keys or bad values are errors
// that name the file and the key.
#include <gtest/gtest.h>

#include <fstream>

#include "cl100k_tokenizer.h"
#include "error_of.h"
#include "replica/core/error.h"
#include "replica/eval/suite.h"
#include "scratch_dir.h"

namespace replica::eval {
namespace {

// A scratch directory holding two domains' token files (a/heldout.npy, b/heldout.npy).
std::string token_dir() {
  const std::string dir = replica::testing::scratch_dir("suite").string();
  for (const char* domain : {"a", "b"}) {
    std::filesystem::create_directories(dir + "/" + domain);
    std::ofstream(dir + "/" + domain + "/heldout.npy") << "tokens";
  }
  return dir;
}

std::string write_suite(const std::string& name, const std::string& yaml) {
  const std::string path = replica::testing::scratch_dir("suite").string() + "/" + name;
  std::ofstream(path) << yaml;
  return path;
}

// The message of the replica::Error that loading `yaml` raises ("" if none).
std::string load_error(const std::string& yaml) {
  return error_of([&] { load_suite(write_suite("bad.yaml", yaml)); });
}

TEST(EvalSuite, ReadsEverySection) {
  const std::string dir = token_dir();
  const std::string path = write_suite("suite.yaml",
                                       "batch_tokens: 1024\n"
                                       "heldout: {files: [" +
                                           dir +
                                           "/*/heldout.npy], seq_len: 64}\n"
                                           "perplexity: {files: " +
                                           dir +
                                           "/a/heldout.npy, window: 32, "
                                           "max_docs: 3}\n"
                                           "tasks:\n"
                                           "  format: olmes\n"
                                           "  limit: 5\n"
                                           "  dir: " +
                                           kSourceDir +
                                           "/tests/fixtures/eval\n"
                                           "  list: [{name: piqa, path: p.jsonl, limit: 2}]\n"
                                           "kl: {reference: ref, files: [" +
                                           dir + "/b/heldout.npy]}\n");
  const SuiteSpec s = load_suite(path);
  EXPECT_EQ(s.batch_tokens, 1024);
  ASSERT_TRUE(s.heldout.enabled);
  ASSERT_EQ(s.heldout.files.size(), 2u);
  EXPECT_EQ(s.heldout.files[0].label, "a");  // stems repeat: labelled by directory
  EXPECT_EQ(s.heldout.files[1].path, dir + "/b/heldout.npy");
  EXPECT_EQ(s.heldout.seq_len, 64);
  ASSERT_TRUE(s.perplexity.enabled);
  ASSERT_EQ(s.perplexity.files.size(), 1u);
  EXPECT_EQ(s.perplexity.files[0].label, "heldout");
  EXPECT_EQ(s.perplexity.window, 32);
  EXPECT_EQ(s.perplexity.max_docs, 3);
  ASSERT_TRUE(s.tasks.enabled);
  EXPECT_EQ(s.tasks.format, TaskFormat::olmes);
  ASSERT_EQ(s.tasks.list.size(), task_names().size() + 1);  // every fixture, then the listed entry
  EXPECT_EQ(s.tasks.list.front().name, task_names().front());
  EXPECT_EQ(s.tasks.list.front().limit, 5);
  EXPECT_EQ(s.tasks.list.back().path, "p.jsonl");
  EXPECT_EQ(s.tasks.list.back().limit, 2);
  EXPECT_EQ(s.kl.reference, "ref");
  ASSERT_EQ(s.kl.files.size(), 1u);
  EXPECT_EQ(s.kl.window, 512);
}

TEST(EvalSuite, UnknownKeysNameTheFileAndTheKey) {
  const std::string dir = token_dir();
  std::string e = load_error("heldout: {files: [" + dir + "/a/heldout.npy], seqlen: 64}\n");
  EXPECT_NE(e.find("bad.yaml: unknown key 'heldout.seqlen' (did you mean 'heldout.seq_len'?) (expected one of "
                   "heldout.files, heldout.seq_len, heldout.max_docs)"),
            std::string::npos)
      << e;
  e = load_error("perplexty: {files: [x.npy]}\n");
  EXPECT_NE(e.find("bad.yaml: unknown key 'perplexty'"), std::string::npos) << e;
  e = load_error("tasks: {list: [{name: piqa, path: p.jsonl}, {name: boolq, file: b.jsonl}]}\n");
  EXPECT_NE(e.find("bad.yaml: unknown key 'tasks.list[1].file'"), std::string::npos) << e;
}

TEST(EvalSuite, BadValuesNameTheFileAndTheKey) {
  const std::string dir = token_dir();
  std::string e = load_error("perplexity: {files: [" + dir + "/a/heldout.npy], window: wide}\n");
  EXPECT_NE(e.find("bad.yaml: 'perplexity.window' expects an integer, got wide"), std::string::npos) << e;
  e = load_error("perplexity: {files: [" + dir + "/a/heldout.npy], window: 0}\n");
  EXPECT_NE(e.find("bad.yaml: perplexity.window must be >= 1"), std::string::npos) << e;
  e = load_error("heldout: {seq_len: 64}\n");
  EXPECT_NE(e.find("bad.yaml: 'heldout.files' lists no token files"), std::string::npos) << e;
  e = load_error("heldout: {files: [" + dir + "/none/*.npy]}\n");
  EXPECT_NE(e.find("/none/*.npy: no such token file"), std::string::npos) << e;
  e = load_error("tasks: {format: helm}\n");
  EXPECT_NE(e.find("bad.yaml: 'tasks.format': unknown task format 'helm'"), std::string::npos) << e;
  e = load_error("kl: {files: [" + dir + "/a/heldout.npy]}\n");
  EXPECT_NE(e.find("bad.yaml: kl.reference names no model"), std::string::npos) << e;
  // Reliability review D14: negative sizes ran as if they were the defaults.
  e = load_error("batch_tokens: -1\n");
  EXPECT_NE(e.find("bad.yaml: batch_tokens must be >= 1, got -1"), std::string::npos) << e;
  e = load_error("heldout: {files: [" + dir + "/a/heldout.npy], seq_len: -5}\n");
  EXPECT_NE(e.find("bad.yaml: heldout.seq_len must be >= 0, got -5"), std::string::npos) << e;
  e = load_error("perplexity: {files: [" + dir + "/a/heldout.npy], max_docs: -1}\n");
  EXPECT_NE(e.find("bad.yaml: perplexity.max_docs must be >= 0, got -1"), std::string::npos) << e;
  // D13: an unknown task is named with the suite file.
  e = load_error("tasks: {list: [{name: foo_task, path: f.jsonl}]}\n");
  EXPECT_NE(e.find("bad.yaml: tasks.list[0].name: unknown task 'foo_task' (expected one of arc_easy"),
            std::string::npos)
      << e;
  // D5: a non-scalar key is a named error, not a yaml-cpp conversion exception.
  e = load_error("tasks:\n  ? [a, b]\n  : 1\n");
  EXPECT_NE(e.find("bad.yaml: a key in 'tasks' is not a name: [a, b]"), std::string::npos) << e;
  e = load_error("- heldout\n");
  EXPECT_NE(e.find("bad.yaml: a suite is a mapping of sections (heldout, perplexity, tasks, kl, needle)"),
            std::string::npos)
      << e;
}

// Runs `body` in a scratch directory that holds data/tokens/{a,b}/heldout.npy, as the built-in suites expect.
template <typename Body>
void in_data_dir(Body body) {
  const std::filesystem::path dir = replica::testing::scratch_dir("builtin_suite");
  const std::filesystem::path cwd = std::filesystem::current_path();
  for (const char* domain : {"a", "b"}) {
    std::filesystem::create_directories(dir / "data/tokens" / domain);
    std::ofstream(dir / "data/tokens" / domain / "heldout.npy") << "tokens";
  }
  std::filesystem::current_path(dir);
  body();
  std::filesystem::current_path(cwd);
}

TEST(EvalSuite, TheDefaultSuiteIsTheFullOneCappedAndFlagsOverrideBoth) {
  in_data_dir([] {
    const std::string tasks = kSourceDir + "/tests/fixtures/eval";
    const SuiteSpec full = builtin_suite("full", tasks, ""), quick = builtin_suite("default", tasks, "");
    ASSERT_EQ(full.heldout.files.size(), 2u);
    EXPECT_EQ(full.heldout.max_docs, 0);
    EXPECT_EQ(full.perplexity.max_docs, 0);
    EXPECT_EQ(quick.heldout.files.size(), 2u);
    EXPECT_EQ(quick.heldout.max_docs, kDefaultHeldoutDocs);
    EXPECT_EQ(quick.perplexity.max_docs, kDefaultPerplexityDocs);
    ASSERT_EQ(quick.tasks.list.size(), 8u);
    for (size_t i = 0; i < quick.tasks.list.size(); i++) {
      const TaskSpec &q = quick.tasks.list[i], &f = full.tasks.list[i];
      EXPECT_EQ(q.limit, kDefaultTaskDocs);
      EXPECT_EQ(f.limit, 0);
      EXPECT_EQ(q.num_fewshot, q.name == "mmlu" ? 5 : 0);  // lm-eval's defaults, MMLU 5-shot as OLMo reports it
      EXPECT_EQ(q.fewshot_path, tasks + "/" + q.name + (q.name == "mmlu" ? "_dev" : "_train") + ".jsonl");
    }
    SuiteSpec capped = full;
    cap_documents(capped, 3);
    set_num_fewshot(capped, 2);
    EXPECT_EQ(capped.heldout.max_docs, 3);
    EXPECT_EQ(capped.perplexity.max_docs, 3);
    for (const TaskSpec& t : capped.tasks.list) {
      EXPECT_EQ(t.limit, 3);
      EXPECT_EQ(t.num_fewshot, 2);
    }
    EXPECT_THROW(cap_documents(capped, 0), Error);
    EXPECT_THROW(set_num_fewshot(capped, -1), Error);
    EXPECT_THROW(builtin_suite("quick", tasks, ""), Error);
  });
}

TEST(EvalSuite, TasksNumFewshotAppliesToTheDirectorysTasksAndListEntriesFindTheirTrainingSplit) {
  const SuiteSpec s = load_suite(write_suite("shots.yaml",
                                             "tasks:\n"
                                             "  num_fewshot: 3\n"
                                             "  dir: " +
                                                 kSourceDir +
                                                 "/tests/fixtures/eval\n"
                                                 "  list: [{name: piqa, path: x/p.jsonl}]\n"));
  ASSERT_EQ(s.tasks.list.size(), 9u);
  for (size_t i = 0; i + 1 < s.tasks.list.size(); i++) EXPECT_EQ(s.tasks.list[i].num_fewshot, 3);
  EXPECT_EQ(s.tasks.list.back().num_fewshot, 0);  // its own, unset
  EXPECT_EQ(s.tasks.list.back().fewshot_path, "x/piqa_train.jsonl");
}

}  // namespace
}  // namespace replica::eval
