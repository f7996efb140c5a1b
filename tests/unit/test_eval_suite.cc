// eval/suite: a suite YAML is read section by section by its surfaces, and unknown keys or bad values are errors
// that name the file and the key.
#include <gtest/gtest.h>

#include <fstream>

#include "scratch_dir.h"
#include "replica/core/error.h"
#include "replica/eval/suite.h"

namespace replica::eval {
namespace {

const std::string kSource = REPLICA_SOURCE_DIR;

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
  try {
    load_suite(write_suite("bad.yaml", yaml));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(EvalSuite, ReadsEverySection) {
  const std::string dir = token_dir();
  const std::string path = write_suite("suite.yaml", "batch_tokens: 1024\n"
                                                     "heldout: {files: [" + dir + "/*/heldout.npy], seq_len: 64}\n"
                                                     "perplexity: {files: " + dir + "/a/heldout.npy, window: 32, "
                                                     "max_docs: 3}\n"
                                                     "tasks:\n"
                                                     "  format: olmes\n"
                                                     "  limit: 5\n"
                                                     "  dir: " + kSource + "/tests/fixtures/eval\n"
                                                     "  list: [{name: piqa, path: p.jsonl, limit: 2}]\n"
                                                     "kl: {reference: ref, files: [" + dir + "/b/heldout.npy]}\n");
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

}  // namespace
}  // namespace replica::eval
