// Task formats against hand-rendered lm-eval / OLMES requests from the fixtures in each task's HF-datasets JSONL
// schema (tests/fixtures/eval/), Python string semantics, lm-eval's pair encoding, and errors naming file:line; the
// few-shot contexts against tools/reference/fewshot_ref.py (lm-eval's sampler transcribed, run on CPython).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cl100k_tokenizer.h"
#include "error_of.h"
#include "replica/core/error.h"
#include "replica/core/pystr.h"
#include "replica/data/tokenizer.h"
#include "replica/eval/task_scoring.h"
#include "replica/eval/tasks.h"
#include "scratch_dir.h"

using namespace replica;
using namespace replica::eval;

namespace {

const std::string kTasks = std::string(REPLICA_SOURCE_DIR) + "/tests/fixtures/eval/";

Task load(const std::string& name, TaskFormat f = TaskFormat::lm_eval, int64_t shots = 0) {
  TaskSpec s;
  s.name = name;
  s.path = kTasks + name + ".jsonl";
  s.fewshot_path = kTasks + name + "_" + fewshot_split(name) + ".jsonl";
  s.num_fewshot = shots;
  return load_task(s, f);
}

std::vector<std::string> continuations(const TaskDoc& d) {
  std::vector<std::string> c;
  for (const Request& r : d.requests) c.push_back(r.continuation);
  return c;
}

// The message of the replica::Error that loading `spec` raises ("" if none).
std::string task_error(const TaskSpec& spec) {
  return error_of([&] { load_task(spec, TaskFormat::lm_eval); });
}

std::string write_task_file(const std::string& name, const std::string& text) {
  const std::string path = (replica::testing::scratch_dir("eval_tasks") / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(EvalPyStr, PythonStringSemantics) {
  EXPECT_EQ(py::strip("\u00a0\t a b \u3000\n"), "a b");
  EXPECT_EQ(py::rstrip("Answer: \n"), "Answer:");
  EXPECT_EQ(py::capitalize("TURN the BBQ"), "Turn the bbq");
  EXPECT_EQ(py::capitalize("\u00e9COLE"), "\u00c9cole");  // é → É, the rest lower
  EXPECT_EQ(py::len("caf\u00e9"), 4);
  EXPECT_EQ(py::replace("a    b", "  ", " "), "a  b");  // one pass: four spaces become two
  EXPECT_EQ(hellaswag_preprocess("a [x] b [no close"), "a b [no close");
  EXPECT_EQ(hellaswag_preprocess("keep [multi\nline] it"), "keep [multi\nline] it");  // '.' stops at \n
}

TEST(EvalTasks, ArcPromptsAndLabels) {
  Task t = load("arc_easy");
  ASSERT_EQ(t.docs.size(), 3u);
  EXPECT_EQ(t.metrics, (std::vector<std::string>{"acc", "acc_norm"}));
  const TaskDoc& d = t.docs[0];
  EXPECT_EQ(d.requests[0].context,
            "Question: An astronomer observes that a planet rotates faster after a meteorite impact. Which is the most "
            "likely effect of this increase in rotation?\nAnswer:");
  EXPECT_EQ(continuations(d), (std::vector<std::string>{" Planetary density will decrease.",
                                                        " Planetary years will become longer.",
                                                        " Planetary days will become shorter.",
                                                        " Planetary gravity will become stronger."}));
  EXPECT_EQ(d.gold, 2);
  EXPECT_EQ(t.docs[1].gold, 3);  // labels "1".."4", answerKey "4"
  EXPECT_EQ(t.docs[2].requests[0].context, "Question: Which tool is used to measure the mass of a caf\u00e9 cup?\nAnswer:");
  EXPECT_EQ(t.docs[2].requests.size(), 3u);
  EXPECT_EQ(load("arc_challenge").docs[1].requests.size(), 5u);
}

TEST(EvalTasks, HellaswagPreprocessing) {
  Task t = load("hellaswag");
  EXPECT_EQ(t.docs[0].requests[0].context, "Roof shingle removal: A man is sitting on a roof. He");
  EXPECT_EQ(t.docs[0].requests[3].continuation, " starts pulling up roofing on a roof.");
  EXPECT_EQ(t.docs[0].gold, 3);
  const TaskDoc& d = t.docs[1];
  // capitalize() lower-cases the rest of ctx_b; " [title]" → ". "; [..] removed; "  " → " " in one pass.
  EXPECT_EQ(d.requests[0].context,
            "Home and Garden: How to clean a BBQ grill. Heat the grill. Turn the burners to high  close the lid.");
  EXPECT_EQ(d.choices, (std::vector<std::string>{" Let it heat for 15 minutes.  Then scrape.",
                                                 "Wait five minutes. Brush the grates.",
                                                 "Pour water on the coals [unclosed bracket", "Spray the grill with oil."}));
  EXPECT_EQ(d.requests[1].continuation, " Wait five minutes. Brush the grates.");
  EXPECT_EQ(d.gold, 1);
}

TEST(EvalTasks, PiqaBoolqOpenbookqa) {
  Task piqa = load("piqa");
  EXPECT_EQ(piqa.docs[1].requests[0].context, "Question: To make a hard boiled egg easier to peel,\nAnswer:");
  EXPECT_EQ(continuations(piqa.docs[1]),
            (std::vector<std::string>{" add baking soda to the water.", " add sugar to the water."}));
  EXPECT_EQ(piqa.docs[2].gold, 1);
  EXPECT_EQ(load("piqa", TaskFormat::olmes).docs[1].requests[0].context,
            "Goal: To make a hard boiled egg easier to peel,\nAnswer:");

  Task boolq = load("boolq");
  EXPECT_EQ(boolq.metrics, std::vector<std::string>{"acc"});
  EXPECT_EQ(boolq.docs[1].requests[0].context,
            "Sun -- The Sun is the star at the center of the Solar System.\nQuestion: is the sun a planet?\nAnswer:");
  EXPECT_EQ(continuations(boolq.docs[0]), (std::vector<std::string>{" no", " yes"}));
  EXPECT_EQ(boolq.docs[0].gold, 1);
  EXPECT_EQ(boolq.docs[1].gold, 0);
  Task olmes = load("boolq", TaskFormat::olmes);
  EXPECT_EQ(continuations(olmes.docs[0]), (std::vector<std::string>{" yes", " no"}));
  EXPECT_EQ(olmes.docs[0].gold, 0);
  EXPECT_EQ(olmes.metrics, (std::vector<std::string>{"acc", "len_norm", "bpb"}));

  Task obqa = load("openbookqa");
  EXPECT_EQ(obqa.docs[1].requests[0].context, "When food is reduced in the stomach");  // raw question_stem
  EXPECT_EQ(obqa.docs[1].gold, 2);                                                  // answerKey " C".lstrip()
  EXPECT_EQ(load("openbookqa", TaskFormat::olmes).docs[1].requests[0].context,
            "Question: When food is reduced in the stomach\nAnswer:");
}

TEST(EvalTasks, WinograndePartialScoring) {
  Task t = load("winogrande");
  EXPECT_EQ(t.metrics, std::vector<std::string>{"acc"});
  const TaskDoc& d = t.docs[0];
  EXPECT_EQ(d.requests[0].context, "Sarah was a much better surgeon than Maria so Sarah");
  EXPECT_EQ(d.requests[1].context, "Sarah was a much better surgeon than Maria so Maria");
  EXPECT_EQ(continuations(d), (std::vector<std::string>{" always got the harder cases.", " always got the harder cases."}));
  EXPECT_EQ(d.gold, 0);
  EXPECT_EQ(t.docs[2].requests[1].context, "I poured water from the bottle into the cup until the cup");
  EXPECT_EQ(t.docs[2].requests[1].continuation, " was full.");
  EXPECT_EQ(t.docs[2].gold, 1);
}

TEST(EvalTasks, MmluFiveShotFirstN) {
  Task t = load("mmlu", TaskFormat::lm_eval, 5);
  ASSERT_EQ(t.docs.size(), 3u);
  const std::string anatomy_shots =
      "What is the embryological origin of the hyoid bone?\nA. ana0a\nB. ana0b\nC. ana0c\nD. ana0d\nAnswer: A\n\n"
      "Which of these branches of the trigeminal nerve contain somatic motor processes?\nA. ana1a\nB. ana1b\nC. ana1c\n"
      "D. ana1d\nAnswer: B\n\n"
      "The pleura\nA. ana2a\nB. ana2b\nC. ana2c\nD. ana2d\nAnswer: C\n\n"
      "In Angle's Class II Div 2 occlusion there is\nA. ana3a\nB. ana3b\nC. ana3c\nD. ana3d\nAnswer: D\n\n"
      "Which of the following is the body cavity that contains the pituitary gland?\nA. ana4a\nB. ana4b\nC. ana4c\n"
      "D. ana4d\nAnswer: A\n\n";
  EXPECT_EQ(t.docs[1].requests[0].context,
            "The following are multiple choice questions (with answers) about anatomy.\n\n" + anatomy_shots +
                "What is the embryological origin of the hyoid bone?\nA. The first pharyngeal arch\nB. The first and "
                "second pharyngeal arches\nC. The second pharyngeal arch\nD. The second and third pharyngeal "
                "arches\nAnswer:");
  EXPECT_EQ(continuations(t.docs[1]), (std::vector<std::string>{" A", " B", " C", " D"}));
  EXPECT_EQ(t.docs[1].gold, 3);
  EXPECT_EQ(load("mmlu").docs[0].requests[0].context,
            "The following are multiple choice questions (with answers) about abstract algebra.\n\nFind the degree for "
            "the given field extension Q(sqrt(2)) over Q.\nA. 0\nB. 2\nC. 1\nD. 3\nAnswer:");
  EXPECT_EQ(load("mmlu", TaskFormat::olmes).docs[0].requests[0].context.substr(0, 85),
            "The following are multiple choice questions (with answers) about abstract algebra:\n\nF");
}

TEST(EvalTasks, EncodePairMovesTrailingSpaceAndSplitsTheWhole) {
  const data::Tokenizer& tok = cl100k_tokenizer();
  auto ids = [&](const std::string& s) {
    std::vector<uint32_t> u = tok.encode_ordinary(s);
    return std::vector<int32_t>(u.begin(), u.end());
  };
  TokenPair p = encode_pair(tok, {"Question: sky?\nAnswer: ", "blue"}, TaskFormat::lm_eval, 100257);
  EXPECT_EQ(p.context, ids("Question: sky?\nAnswer:"));
  EXPECT_EQ(p.continuation, ids(" blue"));
  // Split at len(encode(context)) of the whole: "Hello wor" + "ld" tokenises as "Hello", " world".
  p = encode_pair(tok, {"Hello wor", "ld peace"}, TaskFormat::lm_eval, 100257);
  EXPECT_EQ(p.context, ids("Hello wor"));
  const std::vector<int32_t> whole = ids("Hello world peace");
  EXPECT_EQ(p.continuation, std::vector<int32_t>(whole.begin() + int64_t(p.context.size()), whole.end()));
  // OLMES: separate encodings, no whitespace move.
  p = encode_pair(tok, {"Hello wor", "ld peace"}, TaskFormat::olmes, 100257);
  EXPECT_EQ(p.continuation, ids("ld peace"));
  // An empty context becomes the prefix token (EOS for dolma2).
  p = encode_pair(tok, {"", " x"}, TaskFormat::lm_eval, 100257);
  EXPECT_EQ(p.context, std::vector<int32_t>{100257});
}

TEST(EvalTasks, ErrorsNameFileLineAndField) {
  TaskSpec s;
  s.name = "piqa";
  s.path = write_task_file("replica_bad_piqa.jsonl",
                           "{\"goal\":\"g\",\"sol1\":\"a\",\"sol2\":\"b\",\"label\":0}\n{\"goal\":\"g\"}\n");
  try {
    load_task(s, TaskFormat::lm_eval);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("replica_bad_piqa.jsonl:2: missing field 'sol1'"), std::string::npos) << e.what();
  }
  s.path = write_task_file("replica_bad_json.jsonl", "\n{\"goal\": \n");
  try {
    load_task(s, TaskFormat::lm_eval);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("replica_bad_json.jsonl:2: invalid JSON"), std::string::npos) << e.what();
  }
  s.path = kTasks + "missing.jsonl";
  EXPECT_THROW(load_task(s, TaskFormat::lm_eval), Error);
  s.name = "arc_easy";
  s.path =
      write_task_file("replica_bad_arc.jsonl",
                      "{\"question\":\"q\",\"choices\":{\"text\":[\"a\"],\"label\":[\"A\"]},\"answerKey\":\"B\"}\n");
  EXPECT_THROW(load_task(s, TaskFormat::lm_eval), Error);
}

TEST(EvalTasks, FewshotContextsMatchLmEvalsSamplerOnCPython) {
  // 1, 4 and 5 shots: piqa's 25 training rows are drawn by CPython's set branch of random.sample for up to 5
  // draws and by its pool branch for 6; the tasks without a test split draw one extra shot; every training
  // fixture but arc_challenge's and openbookqa's holds a copy of an evaluated document, which is never its own shot.
  for (int shots : {1, 4, 5}) {
    SCOPED_TRACE(std::to_string(shots) + " shots");
    const std::string out = (replica::testing::scratch_dir("fewshot_ref") / "contexts.json").string();
    const std::string cmd = "/usr/bin/python3 " + std::string(REPLICA_SOURCE_DIR) + "/tools/reference/fewshot_ref.py " +
                            kTasks + " " + std::to_string(shots) + " > " + out;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out);
    const nlohmann::json expected = nlohmann::json::parse(in);
    ASSERT_EQ(expected.size(), task_names().size() - 1);  // every task but mmlu (first-n shots, tested above)
    for (const auto& [name, docs] : expected.items()) {
      const Task t = load(name, TaskFormat::lm_eval, shots);
      ASSERT_EQ(t.docs.size(), docs.size()) << name;
      for (size_t d = 0; d < t.docs.size(); d++) {
        ASSERT_EQ(t.docs[d].requests.size(), docs[d].size()) << name << " doc " << d;
        for (size_t r = 0; r < t.docs[d].requests.size(); r++)
          EXPECT_EQ(t.docs[d].requests[r].context, docs[d][r].get<std::string>()) << name << " doc " << d;
      }
    }
  }
}

TEST(EvalTasks, FewshotNeedsItsSplitAndEnoughShots) {
  TaskSpec s;
  s.name = "boolq";
  s.path = kTasks + "boolq.jsonl";
  s.fewshot_path = kTasks + "no_such_train.jsonl";
  s.num_fewshot = 1;
  try {
    load_task(s, TaskFormat::lm_eval);
    FAIL() << "a missing few-shot split was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs the train split the shots come from: no file"), std::string::npos)
        << e.what();
  }
  s.fewshot_path = kTasks + "boolq_train.jsonl";
  s.num_fewshot = 7;  // 8 draws from 7 rows
  EXPECT_THROW(load_task(s, TaskFormat::lm_eval), Error);
  s.num_fewshot = 1;
  EXPECT_THROW(load_task(s, TaskFormat::olmes), Error);  // OLMES's curated shots are not shipped
}

// Found by fuzz_task: nlohmann::json::parse raises out_of_range, not parse_error, for a number beyond double.
TEST(EvalTasks, ANumberBeyondDoubleIsInvalidJson) {
  TaskSpec s;
  s.name = "boolq";
  s.path = write_task_file("replica_huge_number.jsonl", "{\"passage\":\"p\",\"question\":\"q\",\"label\":1e999}\n");
  const std::string e = task_error(s);
  EXPECT_NE(e.find("replica_huge_number.jsonl:1: invalid JSON"), std::string::npos) << e;
}

// Reliability review D5: a label of more digits than 2^63 escaped from std::stoll as std::out_of_range.
TEST(EvalTasks, AnIntegerLabelTooLargeForInt64IsANamedError) {
  TaskSpec s;
  s.name = "hellaswag";
  for (const char* label : {"\"99999999999999999999\"", "18446744073709551615"}) {
    s.path =
        write_task_file("replica_huge_label.jsonl", std::string("{\"activity_label\":\"a\",\"ctx_a\":\"b\",\"ctx_b\":"
                                                                "\"c\",\"endings\":[\"x\",\"y\"],\"label\":") +
                                                        label + "}\n");
    const std::string e = task_error(s);
    EXPECT_NE(e.find("replica_huge_label.jsonl:1: field 'label' must be an integer below 2^63"), std::string::npos)
        << e;
  }
}
